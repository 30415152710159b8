// hand_e4m3_mul: a float8_e4m3fn (OCP E4M3) multiplier written by hand, independently of
// fpforge's generated units, as a third party would write one: the stand-in for a user's IP in
// tests/fpforge/test_verify_hand_written.py. Plain Verilog-2005, combinational.
//
// E4M3: bias 7, subnormals, no infinities, NaN = S.1111.111, largest finite 0.1111.110 = 448.
// Round to nearest, ties to even; a rounded magnitude above 448 is an overflow and gives NaN
// (the format has no infinity), with OF and NX. Tininess is detected after rounding (the
// product rounded to 4 significant bits with an unbounded exponent is below 2^-6); UF is raised
// when the result is tiny and inexact. Any NaN operand gives NaN without flags. Every NaN this
// unit returns is {sign of the product, 7'h7f}: 0xff for a negative NaN.
//
// fflags = {NV, DZ, OF, UF, NX} (RISC-V fflags order); NV and DZ are always 0 here.
//
// TIES_AWAY = 1 builds a deliberately wrong variant: ties round away from zero.
module hand_e4m3_mul #(parameter TIES_AWAY = 0) (
  input  [7:0] op_a,
  input  [7:0] op_b,
  output [7:0] res,
  output [4:0] fflags
);
  wire       sign = op_a[7] ^ op_b[7];
  wire [3:0] ea = op_a[6:3], eb = op_b[6:3];
  wire       nan_in = (op_a[6:0] == 7'h7f) || (op_b[6:0] == 7'h7f);

  // Significands with the hidden bit; a subnormal has exponent field 0 and weight of field 1.
  wire [3:0] ma = {ea != 4'd0, op_a[2:0]};
  wire [3:0] mb = {eb != 4'd0, op_b[2:0]};
  wire [7:0] prod = ma * mb;                    // value = prod * 2^(ea' + eb' - 20)
  wire signed [6:0] exp_sum = (ea == 4'd0 ? 7'sd1 : {3'b0, ea}) +
                              (eb == 4'd0 ? 7'sd1 : {3'b0, eb});

  // Normalize: the leading one to bit 7; the product is then 1.xxxxxxx * 2^(be - 7), be biased.
  reg [3:0] lz;
  integer i;
  always @(*) begin
    lz = 4'd8;
    for (i = 0; i < 8; i = i + 1)
      if (prod[i]) lz = 4'd7 - i[3:0];
  end
  wire [7:0] norm = prod << lz;
  wire signed [6:0] be = exp_sum - 7'sd6 - {3'b0, lz};

  // Below the normal range the significand is shifted right (exponent field 0) and loses bits.
  wire [3:0] shift = be >= 7'sd1 ? 4'd0 : (be < -7'sd14 ? 4'd15 : 4'd1 - be[3:0]);
  // verilator lint_off UNUSEDSIGNAL
  wire [23:0] wide = {norm, 16'b0} >> shift;   // [23]: the hidden bit, implied by exp_field
  // verilator lint_on UNUSEDSIGNAL
  wire [3:0] exp_field = be >= 7'sd1 ? be[3:0] : 4'd0;
  wire       lsb = wide[20], rnd = wide[19], sticky = |wide[18:0];
  wire       inc = TIES_AWAY ? rnd : rnd & (sticky | lsb);
  wire [7:0] mag = {1'b0, exp_field, wide[22:20]} + {7'b0, inc};
  wire       inexact = rnd | sticky;

  // Tiny after rounding: below 2^-6 unless the product at 2^-7 rounds up to 2^-6 in 4 bits.
  wire carry_at_7 = (be == 7'sd0) && (norm[6:3] == 4'hf) &&
                    (TIES_AWAY ? 1'b1 : ((|norm[2:0]) | norm[4]));
  wire tiny = (be <= 7'sd0) && !carry_at_7;
  wire overflow = (be >= 7'sd16) || (mag >= 8'h7f);
  wire zero = prod == 8'd0;

  assign res = nan_in || (overflow && !zero) ? {sign, 7'h7f}
             : zero ? {sign, 7'h00}
             : {sign, mag[6:0]};
  assign fflags = nan_in || zero ? 5'b0
                : overflow ? 5'b00101
                : {3'b000, tiny & inexact, inexact};
endmodule
