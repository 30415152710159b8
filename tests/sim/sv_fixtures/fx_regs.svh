// Register macros of the test FPU, after common_cells' registers.svh: one flip-flop with a load
// enable and an active-low asynchronous reset, the clock and reset named by default arguments.
`ifndef FX_REGS_SVH
`define FX_REGS_SVH

`define FX_FFL(__q, __d, __load, __reset_value, __clk = clk_i, __arst_n = rst_ni) \
  always_ff @(posedge (__clk) or negedge (__arst_n)) begin                        \
    if (!(__arst_n)) begin                                                         \
      __q <= (__reset_value);                                                      \
    end else if (__load) begin                                                     \
      __q <= (__d);                                                                \
    end                                                                            \
  end

`endif
