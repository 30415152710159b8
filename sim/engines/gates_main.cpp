// The gates engine's simulation loop (see sim/engines/gates.py for the why).
//
// The protocol is the native engine's (native_main.cpp, pipe_protocol.h) for a design without a
// handshake: blocks of steps through the pipe, `--index`, `--shm`. One step is LANES = 256
// vectors: bit j of every signal's 256-bit word is lane j, so one operation of the netlist
// (model.cpp, eval_gates) evaluates a gate for 256 vectors at once. Rows of codes (a lane's
// element in a little-endian container of CB bytes) become bit planes on the way in and rows
// on the way out; a step of the exhaustive index that starts at a multiple of 256 is written as
// words directly. A pipelined design (LATENCY > 0) is clocked as native_main.cpp clocks it:
// reset for 3 cycles, then one cycle per step, the outputs of step s read LATENCY - 1 cycles
// after the edge that takes its inputs, the last inputs held while the pipeline drains; lane j
// of every flip-flop word is lane j's pipeline.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// ports.h (gates.py): the native engine's (LANES, FOR_INPUTS, FOR_OUTPUTS, FOR_FIELDS), then
// IN_PLANES, OUT_PLANES, FOR_INPUT_PLANES(X) and FOR_OUTPUT_PLANES(X) with X(port, container
// bytes, elements per lane, lane width, first plane)
#include "ports.h"
#define PROG "gates"
#include "pipe_protocol.h"

typedef uint64_t V __attribute__((vector_size(32)));
static_assert(LANES == 8 * sizeof(V), "one bit of a word per lane");
// model.cpp, which holds the flip-flops' state: their initial values; one clock cycle (the next
// state, then the outputs from the inputs and the new state).
void init_state();
void eval_gates(const V* __restrict in, bool reset, V* __restrict out);

static V broadcast(uint64_t w) { V v = {w, w, w, w}; return v; }

static uint64_t SPREAD[256];  // byte b -> 8 bytes, byte j = bit j of b

// Bit t of each byte of x, as one byte (bit j from byte j): the terms of the product land on
// distinct bits, so no carry disturbs the top byte.
static inline uint8_t gather(uint64_t x, int t) {
    return uint8_t((((x >> t) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

// One port's row (LANES lanes x SLOTS elements, containers of CB bytes, lane j element e at
// container j * SLOTS + e) into its planes: element e's bit k is plane e * WIDTH + k.
static void to_planes(const uint8_t* row, int cb, int slots, int width, V* planes) {
    for (int e = 0; e < slots; e++)
        for (int q = 0; q < cb && 8 * q < width; q++)
            for (int g = 0; g < LANES / 8; g++) {
                uint64_t x = 0;
                for (int j = 0; j < 8; j++)
                    x |= uint64_t(row[((8 * g + j) * slots + e) * cb + q]) << (8 * j);
                for (int t = 0; t < 8 && 8 * q + t < width; t++)
                    reinterpret_cast<uint8_t*>(&planes[e * width + 8 * q + t])[g] = gather(x, t);
            }
}

// The inverse: planes into a row (bits above WIDTH zero).
static void from_planes(const V* planes, int cb, int slots, int width, uint8_t* row) {
    for (int e = 0; e < slots; e++)
        for (int q = 0; q < cb; q++)
            for (int g = 0; g < LANES / 8; g++) {
                uint64_t acc = 0;
                for (int t = 0; t < 8 && 8 * q + t < width; t++)
                    acc |= SPREAD[reinterpret_cast<const uint8_t*>(
                        &planes[e * width + 8 * q + t])[g]] << t;
                for (int j = 0; j < 8; j++)
                    row[((8 * g + j) * slots + e) * cb + q] = uint8_t(acc >> (8 * j));
            }
}

// A whole step of consecutive tuples from `base`, a multiple of LANES: the index's low bits are
// the lane number (the same words every step), the rest the same in every lane.
static void index_planes(uint64_t base, const V* lane_bits, V* in) {
#define PLANES(port, row, cb, slots, slot, shift, width, plane) \
    for (int k = 0; k < (width); k++) { \
        const int at = (shift) + k; \
        in[(plane) + (slot) * (width) + k] = at < 8 ? lane_bits[at] : \
            broadcast(at < 64 && (base >> at & 1) ? ~0ull : 0); }
    FOR_FIELDS(PLANES)
    (void)base; (void)lane_bits; (void)in;
}

// `fast --bare STEPS`: the simulator alone (make bench-exhaustive), as native_main.cpp's: STEPS
// steps over a 64-row block of pseudo-random rows, each step's rows turned into planes,
// evaluated and turned back into rows; prints "STEPS SECONDS SINK".
static int bare(uint64_t steps) {
    const size_t block = 64;
    uint64_t x = 88172645463325252ull, sink = 0;
    static V in[IN_PLANES > 0 ? IN_PLANES : 1], out[OUT_PLANES > 0 ? OUT_PLANES : 1];
    FOR_INPUTS(BARE_ROWS)
    FOR_OUTPUTS(BARE_ROWS)
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t t = 0; t < steps; t++) {
        const size_t s = t % block;
#define BARE_IN(port, cb, slots, width, plane) \
        to_planes(port##_bare.data() + s * port##_row, cb, slots, width, in + (plane));
        FOR_INPUT_PLANES(BARE_IN)
        eval_gates(in, false, out);
#define BARE_OUT(port, cb, slots, width, plane) \
        from_planes(out + (plane), cb, slots, width, port##_bare.data() + s * port##_row); \
        sink += port##_bare[s * port##_row];
        FOR_OUTPUT_PLANES(BARE_OUT)
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_bare(steps, dt, sink);
    return 0;
}

int main(int argc, char** argv) {
    for (int b = 0; b < 256; b++) {
        uint64_t s = 0;
        for (int i = 0; i < 8; i++) s |= uint64_t(b >> i & 1) << (8 * i);
        SPREAD[b] = s;
    }
    init_state();
    if (LATENCY) {          // as native_main.cpp: 3 cycles of reset, the inputs 0
        static V zero_in[IN_PLANES > 0 ? IN_PLANES : 1], sink[OUT_PLANES > 0 ? OUT_PLANES : 1];
        for (int i = 0; i < 3; i++) eval_gates(zero_in, true, sink);
    }
    if (argc == 3 && !strcmp(argv[1], "--bare")) return bare(strtoull(argv[2], 0, 10));
    V lane_bits[8];         // bit k of the lane number, in every lane
    for (int k = 0; k < 8; k++) {
        uint64_t w[4] = {0, 0, 0, 0};
        for (int j = 0; j < LANES; j++) w[j / 64] |= uint64_t(j >> k & 1) << (j % 64);
        memcpy(&lane_bits[k], w, sizeof w);
    }
    static V in[IN_PLANES > 0 ? IN_PLANES : 1], out[OUT_PLANES > 0 ? OUT_PLANES : 1];
    START_RUN()
    uint32_t steps;
    for (uint64_t block = 0; read_exact(&steps, 4) && steps; block++) {
        START_BLOCK()
        uint64_t head[2] = {0, 0};  // --index: first tuple, tuples in the block
        bool aligned = false;       // --index, whole steps from a multiple of LANES: no rows
        if (run.index) {
            if (!read_exact(head, sizeof head)) return 1;
            aligned = head[0] % LANES == 0 && head[1] == uint64_t(steps) * LANES;
            if (!aligned) {
                uint8_t* bufs[] = {FOR_FIELDS(FIELD_BUF) nullptr};
                const size_t rows[] = {FOR_FIELDS(FIELD_ROW) 0};
                fill_index(bufs, rows, steps, head[0], head[1]);
            }
        } else {
            FOR_INPUTS(READ_INPUT)
        }
        const uint32_t delay = LATENCY ? LATENCY : 1;   // steps from inputs to outputs read
        for (uint32_t t = 0; t < steps + delay - 1; t++) {
            const uint32_t s = t < steps ? t : steps - 1;
            if (aligned) {
                index_planes(head[0] + uint64_t(s) * LANES, lane_bits, in);
            } else {
#define IN(port, cb, slots, width, plane) \
                to_planes(port##_buf.data() + s * port##_row, cb, slots, width, in + (plane));
                FOR_INPUT_PLANES(IN)
            }
            eval_gates(in, false, out);
            if (t + 1 < delay) continue;
#define OUT(port, cb, slots, width, plane) \
            from_planes(out + (plane), cb, slots, width, port##_out + (t + 1 - delay) * port##_row);
            FOR_OUTPUT_PLANES(OUT)
        }
        if (run.shm) {
            const uint32_t done = steps * LANES;
            write_exact(&done, 4);
        } else {
            FOR_OUTPUTS(WRITE_OUTPUT)
        }
        fflush(stdout);
    }
    return 0;
}
