// The native engine's simulation loop (see sim/engines/native.py for the why and the protocol).
//
// stdin:  blocks of [uint32 steps][each input port: steps rows of ROW bytes]
//         (steps == 0 ends the run)
//         or, started with `--index` (an exhaustive run: the inputs are the index split into
//         fields, FOR_FIELDS), blocks of [uint32 steps][uint64 first][uint64 n] and no inputs:
//         vector k of the block (lane k % LANES of step k / LANES) is input tuple first + k,
//         the last row padded with first + k % n, as the pipe's blocks are.
// stdout: per block, each output port: steps rows of ROW bytes, in step order; or, started with
//         `--shm FD SLOT` (FD: a shared memory file of two slots of SLOT bytes), the outputs in
//         slot (block % 2), port after port, and on stdout only the block's uint32 count.
// LATENCY 0 (a combinational unit): one eval() per step. Otherwise one clock cycle per step; the
// outputs of step s are read LATENCY - 1 cycles after the edge that takes its inputs, and the
// last inputs are held while the pipeline drains.
// HANDSHAKE (an elastic design): each lane steps through its rows at its own pace, an input
// taken on an edge where its valid and ready are high, a result where its valid is high; each
// block's outputs start with a uint32, the vectors before the first without a result, and the
// run ends after a block where BUDGET cycles passed without a result.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "Vfast.h"
#include "verilated.h"
#include "ports.h"  // LATENCY, FOR_INPUTS(X), FOR_OUTPUTS(X) (port, row bytes): native.py
#ifndef HANDSHAKE   // ports.h defines it (with BUDGET) for an elastic design
#define HANDSHAKE 0
#endif
#include "pipe_protocol.h"  // the block framing, --index and --shm, fill_index

static void tick(Vfast* top) {
    top->clk = 0;
    top->eval();
    top->clk = 1;
    top->eval();
}

#if !HANDSHAKE
// `fast --bare STEPS`: the simulator alone, the ceiling of a run's rate (make bench-exhaustive).
// The loop below without the pipes: STEPS steps over a 4096-row block of pseudo-random input
// codes, each step's inputs copied in, evaluated (clocked) and its outputs copied out, as a run
// does; prints "STEPS SECONDS SINK".
static int bare(Vfast* top, uint64_t steps) {
    const size_t block = 4096;
    uint64_t x = 88172645463325252ull, sink = 0;
    FOR_INPUTS(BARE_ROWS)
    FOR_OUTPUTS(BARE_ROWS)
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t t = 0; t < steps; t++) {
        const size_t s = t % block;
#define BARE_DRIVE(port, row) memcpy(&top->port, port##_bare.data() + s * (row), row);
        FOR_INPUTS(BARE_DRIVE)
        if (LATENCY) tick(top); else top->eval();
#define BARE_SAMPLE(port, row) memcpy(port##_bare.data() + s * (row), &top->port, row); \
        sink += port##_bare[s * (row)];
        FOR_OUTPUTS(BARE_SAMPLE)
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_bare(steps, dt, sink);
    return 0;
}
#endif

int main(int argc, char** argv) {
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Vfast>(ctx.get());
    top->rst = 1;
    for (int i = 0; i < 3; i++) tick(top.get());
    top->rst = 0;
#if !HANDSHAKE
    if (argc == 3 && !strcmp(argv[1], "--bare")) return bare(top.get(), strtoull(argv[2], 0, 10));
#endif

#define FITS(port, row) \
    static_assert(sizeof(top->port) >= size_t(row), "port narrower than its row");
    FOR_INPUTS(FITS)
    FOR_OUTPUTS(FITS)
    START_RUN()
    uint32_t steps;
    for (uint64_t block = 0; read_exact(&steps, 4) && steps; block++) {
        START_BLOCK()
        if (run.index) {
            uint64_t head[2];   // first tuple, tuples in the block
            if (!read_exact(head, sizeof head)) return 1;
            uint8_t* bufs[] = {FOR_FIELDS(FIELD_BUF) nullptr};
            const size_t rows[] = {FOR_FIELDS(FIELD_ROW) 0};
            fill_index(bufs, rows, steps, head[0], head[1]);
        } else {
            FOR_INPUTS(READ_INPUT)
        }
#if HANDSHAKE
        // Lane j's share of a row is row / LANES bytes at offset j * (row / LANES).
        std::vector<uint32_t> in(LANES, 0), out(LANES, 0);
        uint32_t owed = LANES;
        for (uint32_t idle = 0; owed && idle < BUDGET; ) {
            uint32_t offer = 0;
            for (uint32_t j = 0; j < LANES; j++) {
                if (in[j] == steps) continue;
                offer |= 1u << j;
#define DRIVE_LANE(port, row) memcpy(reinterpret_cast<uint8_t*>(&top->port) + j * (row / LANES), \
    port##_buf.data() + in[j] * port##_row + j * (row / LANES), row / LANES);
                FOR_INPUTS(DRIVE_LANE)
            }
            top->hs_vin = offer;
            top->clk = 0;
            top->eval();                      // ready and valid as the rising edge sees them
            const uint32_t taken = offer & top->hs_rin, valid = top->hs_vout;
            idle++;
            for (uint32_t j = 0; j < LANES; j++) {
                in[j] += taken >> j & 1;
                if (!(valid >> j & 1) || out[j] == steps) continue;
#define SAMPLE_LANE(port, row) memcpy(port##_out + out[j] * port##_row + j * (row / LANES), \
    reinterpret_cast<const uint8_t*>(&top->port) + j * (row / LANES), row / LANES);
                FOR_OUTPUTS(SAMPLE_LANE)
                idle = 0;
                owed -= ++out[j] == steps;
            }
            top->clk = 1;
            top->eval();
        }
        uint32_t first = steps * LANES;
        for (uint32_t j = 0; j < LANES; j++)
            if (out[j] < steps && out[j] * LANES + j < first) first = out[j] * LANES + j;
        write_exact(&first, 4);
#else
        const uint32_t delay = LATENCY ? LATENCY : 1;   // steps from inputs to outputs read
        for (uint32_t t = 0; t < steps + delay - 1; t++) {
            const size_t s = t < steps ? t : steps - 1;
            // The wide ports are little-endian words, element 0 lowest: a row of codes as is.
#define DRIVE(port, row) memcpy(&top->port, port##_buf.data() + s * port##_row, port##_row);
            FOR_INPUTS(DRIVE)
            if (LATENCY) tick(top.get()); else top->eval();
            if (t + 1 >= delay) {
                const size_t o = t + 1 - delay;
#define SAMPLE(port, row) memcpy(port##_out + o * port##_row, &top->port, port##_row);
                FOR_OUTPUTS(SAMPLE)
            }
        }
#endif
#if !HANDSHAKE
        const uint32_t first = steps * LANES;
        if (run.shm) write_exact(&first, 4);
#endif
        if (!run.shm) { FOR_OUTPUTS(WRITE_OUTPUT) }
        fflush(stdout);
#if HANDSHAKE
        if (owed) return 3;   // the design stopped delivering: the session says where
#endif
    }
    top->final();
    return 0;
}
