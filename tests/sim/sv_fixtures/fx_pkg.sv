// Types of the test FPU fx_fpu, shaped like an industrial FPU's package: a rounding-mode enum
// with reserved codes, an operation enum and a packed status struct.
package fx_pkg;

  // The codes 0-4 are RISC-V's frm. ROD, RSR and DYN are reserved here: the shell does not
  // implement them (a verifier must not drive them; see fx_fpu's rounding map).
  typedef enum logic [2:0] {
    RNE = 3'd0,
    RTZ = 3'd1,
    RDN = 3'd2,
    RUP = 3'd3,
    RMM = 3'd4,
    ROD = 3'd5,  // reserved: round to odd
    RSR = 3'd6,  // reserved: stochastic rounding
    DYN = 3'd7   // reserved: take the mode from a CSR (there is none here)
  } roundmode_e;

  // SUB reuses the adder with the sign of the second operand flipped; code 3 is reserved.
  typedef enum logic [1:0] {
    MUL = 2'd0,
    ADD = 2'd1,
    SUB = 2'd2
  } operation_e;

  // Packed, so NV is the most significant bit: RISC-V's fflags order.
  typedef struct packed {
    logic NV;  // invalid operation
    logic DZ;  // divide by zero
    logic OF;  // overflow
    logic UF;  // underflow
    logic NX;  // inexact
  } status_t;

endpackage
