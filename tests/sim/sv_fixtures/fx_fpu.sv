// fx_fpu: a small test FPU in the style of industrial SystemVerilog FPUs (package types on the
// ports, a parameter type, a packed 2-D operand port, a register macro from an included header,
// a valid/ready pipeline carrying a tag, a busy output). The arithmetic is not written here: it
// is fpforge's own E4M3 multiplier and adder with dynamic rounding, exported as fx_core_mul and
// fx_core_add (README.md), so the correct variant is correct by construction and FAULT breaks
// only the shell around them.
//
// Two stages: stage 0 registers the request, the cores compute from it, stage 1 registers the
// answer. A stage loads when it is empty or its successor takes its content, so a full pipeline
// with out_ready_i low holds in_ready_o low and loses nothing.
`include "fx_regs.svh"

module fx_fpu import fx_pkg::*; #(
  parameter type         T        = logic [7:0],
  parameter int unsigned NUM_OPS  = 3,
  // 0 correct; 1 UF cleared on a result at the subnormal/normal boundary; 2 RNE rounds ties
  // away (routed to the cores as RNA); 3 a NaN result comes back with its sign flipped.
  parameter int unsigned FAULT    = 0
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  T [NUM_OPS-1:0]       operands_i,
  input  roundmode_e           rnd_mode_i,
  input  operation_e           op_i,
  input  logic [3:0]           tag_i,
  input  logic                 in_valid_i,
  output logic                 in_ready_o,
  output T                     result_o,
  output status_t              status_o,
  output logic [3:0]           tag_o,
  output logic                 out_valid_o,
  input  logic                 out_ready_i,
  output logic                 busy_o
);

  // float8_e4m3fn magnitudes (the cores' format): the boundary FAULT 1 looks at, and the NaN.
  localparam logic [6:0] MAX_SUBNORMAL = 7'h07;  // 0'0000'111 = 7 * 2^-9
  localparam logic [6:0] MIN_NORMAL    = 7'h08;  // 0'0001'000 = 2^-6
  localparam logic [6:0] NAN_MAG       = 7'h7f;  // 0'1111'111, either sign

  if ($bits(T) != 8) begin : g_bad_width
    $fatal(1, "fx_fpu: T must be 8 bits wide (the cores are float8_e4m3fn)");
  end
  if (NUM_OPS < 2) begin : g_bad_num_ops
    $fatal(1, "fx_fpu: NUM_OPS must be at least 2");
  end
  if (FAULT > 3) begin : g_bad_fault
    $fatal(1, "fx_fpu: FAULT must be 0..3");
  end

  // The cores' rm input takes RISC-V codes. The reserved codes have no mode of their own: ROD
  // rounds as RTZ and RSR/DYN as RNE, so only codes 0-4 mean what their names say.
  function automatic logic [2:0] core_rm(roundmode_e mode);
    unique case (mode)
      RNE:     return (FAULT == 2) ? 3'd4 : 3'd0;
      RTZ:     return 3'd1;
      RDN:     return 3'd2;
      RUP:     return 3'd3;
      RMM:     return 3'd4;
      ROD:     return 3'd1;
      default: return 3'd0;
    endcase
  endfunction

  // ---- stage 0: the request ------------------------------------------------------------------
  logic                 s0_valid_q, s0_ready;
  T [NUM_OPS-1:0]       s0_operands_q;
  logic [2:0]           s0_rm_q;
  operation_e           s0_op_q;
  logic [3:0]           s0_tag_q;

  // ---- stage 1: the answer -------------------------------------------------------------------
  logic                 s1_valid_q, s1_ready;
  T                     s1_result_q;
  status_t              s1_status_q;
  logic [3:0]           s1_tag_q;

  assign s1_ready   = ~s1_valid_q | out_ready_i;
  assign s0_ready   = ~s0_valid_q | s1_ready;
  assign in_ready_o = s0_ready;

  `FX_FFL(s0_valid_q,    in_valid_i,           s0_ready,               1'b0)
  `FX_FFL(s0_operands_q, operands_i,           in_valid_i & s0_ready,  '0)
  `FX_FFL(s0_rm_q,       core_rm(rnd_mode_i),  in_valid_i & s0_ready,  3'd0)
  `FX_FFL(s0_op_q,       op_i,                 in_valid_i & s0_ready,  MUL)
  `FX_FFL(s0_tag_q,      tag_i,                in_valid_i & s0_ready,  4'd0)

  // ---- the cores -----------------------------------------------------------------------------
  logic [7:0] mul_y, add_y, add_b;
  logic [4:0] mul_flags, add_flags;

  // a - b = a + (-b): flipping the sign of a NaN operand changes nothing, the result is a NaN.
  assign add_b = (s0_op_q == SUB) ? {~s0_operands_q[1][7], s0_operands_q[1][6:0]}
                                  : s0_operands_q[1];

  fx_core_mul i_mul (.a(s0_operands_q[0]), .b(s0_operands_q[1]), .rm(s0_rm_q),
                     .y(mul_y), .flags(mul_flags));
  fx_core_add i_add (.a(s0_operands_q[0]), .b(add_b), .rm(s0_rm_q),
                     .y(add_y), .flags(add_flags));

  T        result;
  status_t status;

  always_comb begin
    if (s0_op_q == MUL) begin
      result = T'(mul_y);
      status = status_t'(mul_flags);
    end else begin
      result = T'(add_y);
      status = status_t'(add_flags);
    end
    if (FAULT == 1 && (result[6:0] == MAX_SUBNORMAL || result[6:0] == MIN_NORMAL)) begin
      status.UF = 1'b0;
    end
    if (FAULT == 3 && result[6:0] == NAN_MAG) begin
      result[7] = ~result[7];
    end
  end

  `FX_FFL(s1_valid_q,  s0_valid_q,  s1_ready,               1'b0)
  `FX_FFL(s1_result_q, result,      s0_valid_q & s1_ready,  '0)
  `FX_FFL(s1_status_q, status,      s0_valid_q & s1_ready,  '0)
  `FX_FFL(s1_tag_q,    s0_tag_q,    s0_valid_q & s1_ready,  4'd0)

  assign result_o    = s1_result_q;
  assign status_o    = s1_status_q;
  assign tag_o       = s1_tag_q;
  assign out_valid_o = s1_valid_q;
  assign busy_o      = s0_valid_q | s1_valid_q;

endmodule
