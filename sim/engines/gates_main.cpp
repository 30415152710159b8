// The gates engine's simulation loop (see sim/engines/gates.py for the why).
//
// The protocol is the native engine's (sim/engines/native_main.cpp), for a combinational design:
// stdin:  blocks of [uint32 steps][each input port: steps rows of ROW bytes]
//         (steps == 0 ends the run)
//         or, started with `--index`, blocks of [uint32 steps][uint64 first][uint64 n] and no
//         inputs: vector k of the block (lane k % LANES of step k / LANES) is input tuple
//         first + k, the last row padded with first + k % n.
// stdout: per block, each output port: steps rows of ROW bytes; or, started with
//         `--shm FD SLOT`, the outputs in slot (block % 2) and on stdout only the block's uint32
//         count.
// One step is LANES = 256 vectors: bit j of every signal's 256-bit word is lane j, so one
// operation of the netlist (model.cpp, eval_gates) evaluates a gate for 256 vectors at once.
// Rows of codes (a lane's element in a little-endian container of CB bytes) become bit planes on
// the way in and rows again on the way out.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#include "ports.h"  // LANES, IN_PLANES, OUT_PLANES, FOR_INPUTS, FOR_OUTPUTS, FOR_FIELDS: gates.py
#ifndef FOR_FIELDS  // every input a field of the exhaustive index, or not
#define FOR_FIELDS(X)
#define INDEX_MODE 0
#else
#define INDEX_MODE 1
#endif

typedef uint64_t V __attribute__((vector_size(32)));
static_assert(LANES == 8 * sizeof(V), "one bit of a word per lane");
void eval_gates(const V* __restrict in, V* __restrict out);   // model.cpp

static bool read_exact(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }

static void write_exact(const void* p, size_t n) {
    if (fwrite(p, 1, n, stdout) != n) { perror("gates: write"); exit(2); }
}

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

// An exhaustive block's inputs from its index into rows (any start, any padding): field
// (port, row, container bytes, slots, slot, shift, width, plane) of tuple idx is
// (idx >> shift) & (2^width - 1), in container lane * slots + slot of the port's row.
static void fill_index(uint8_t* const* bufs, const size_t* rows, uint32_t steps, uint64_t first,
                       uint64_t n) {
    for (uint32_t s = 0; s < steps; s++)
        for (uint32_t j = 0; j < LANES; j++) {
            const uint64_t k = uint64_t(s) * LANES + j;
            const uint64_t idx = first + (k < n ? k : k % n);
            int f = 0;
#define FILL(port, row, cb, slots, slot, shift, width, plane) { \
            const uint32_t v = (shift) >= 64 ? 0 : uint32_t((idx >> ((shift) & 63)) & \
                ((uint64_t(1) << (width)) - 1)); \
            memcpy(bufs[f] + s * rows[f] + (j * (slots) + (slot)) * (cb), &v, cb); f++; }
            FOR_FIELDS(FILL)
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
#define BARE_DECLARE(port, row, cb, slots, width, plane) \
    std::vector<uint8_t> port##_bare(block * (row)); \
    for (auto& c : port##_bare) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; c = uint8_t(x); }
    FOR_INPUTS(BARE_DECLARE)
    FOR_OUTPUTS(BARE_DECLARE)
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t t = 0; t < steps; t++) {
        const size_t s = t % block;
#define BARE_IN(port, row, cb, slots, width, plane) \
        to_planes(port##_bare.data() + s * (row), cb, slots, width, in + (plane));
        FOR_INPUTS(BARE_IN)
        eval_gates(in, out);
#define BARE_OUT(port, row, cb, slots, width, plane) \
        from_planes(out + (plane), cb, slots, width, port##_bare.data() + s * (row)); \
        sink += port##_bare[s * (row)];
        FOR_OUTPUTS(BARE_OUT)
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%llu %.6f %llu\n", (unsigned long long)steps, dt, (unsigned long long)(sink & 1));
    return 0;
}

int main(int argc, char** argv) {
    for (int b = 0; b < 256; b++) {
        uint64_t s = 0;
        for (int i = 0; i < 8; i++) s |= uint64_t(b >> i & 1) << (8 * i);
        SPREAD[b] = s;
    }
    if (argc == 3 && !strcmp(argv[1], "--bare")) return bare(strtoull(argv[2], 0, 10));
    V lane_bits[8];         // bit k of the lane number, in every lane
    for (int k = 0; k < 8; k++) {
        uint64_t w[4] = {0, 0, 0, 0};
        for (int j = 0; j < LANES; j++) w[j / 64] |= uint64_t(j >> k & 1) << (j % 64);
        memcpy(&lane_bits[k], w, sizeof w);
    }
    static V in[IN_PLANES > 0 ? IN_PLANES : 1], out[OUT_PLANES > 0 ? OUT_PLANES : 1];
#define DECLARE(port, row, cb, slots, width, plane) std::vector<uint8_t> port##_buf; \
    uint8_t* port##_out = nullptr; const size_t port##_row = (row);
    FOR_INPUTS(DECLARE)
    FOR_OUTPUTS(DECLARE)
    bool index = false;
    uint8_t* shm = nullptr;     // --shm: the outputs' two slots
    size_t slot = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--index")) {
            index = true;
        } else if (!strcmp(argv[i], "--shm") && i + 2 < argc) {
            slot = strtoull(argv[i + 2], 0, 10);
            void* m = mmap(nullptr, 2 * slot, PROT_READ | PROT_WRITE, MAP_SHARED,
                           atoi(argv[i + 1]), 0);
            if (m == MAP_FAILED) { perror("gates: mmap"); return 2; }
            shm = static_cast<uint8_t*>(m);
            i += 2;
        }
    }
    if (index && !INDEX_MODE) { fprintf(stderr, "gates: no exhaustive fields\n"); return 2; }
    uint32_t steps;
    for (uint64_t block = 0; read_exact(&steps, 4) && steps; block++) {
#define RESIZE(port, row, cb, slots, width, plane) port##_buf.resize(steps * port##_row);
        FOR_INPUTS(RESIZE)
        size_t at = (block % 2) * slot;     // the next output port's place in the slot
#define PLACE(port, row, cb, slots, width, plane) \
        if (shm) { port##_out = shm + at; at += steps * port##_row; } \
        else { port##_buf.resize(steps * port##_row); port##_out = port##_buf.data(); }
        FOR_OUTPUTS(PLACE)
        if (shm && at > (block % 2 + 1) * slot) {
            fprintf(stderr, "gates: a block of %u steps overflows its slot\n", steps);
            return 2;
        }
        uint64_t head[2] = {0, 0};  // --index: first tuple, tuples in the block
        bool aligned = false;       // --index, whole steps from a multiple of LANES: no rows
        if (index) {
            if (!read_exact(head, sizeof head)) return 1;
            aligned = head[0] % LANES == 0 && head[1] == uint64_t(steps) * LANES;
            if (!aligned) {
#define FIELD_BUF(port, row, cb, slots, slot, shift, width, plane) port##_buf.data(),
#define FIELD_ROW(port, row, cb, slots, slot, shift, width, plane) size_t(row),
                uint8_t* bufs[] = {FOR_FIELDS(FIELD_BUF) nullptr};
                const size_t rows[] = {FOR_FIELDS(FIELD_ROW) 0};
                fill_index(bufs, rows, steps, head[0], head[1]);
            }
        } else {
#define READ(port, row, cb, slots, width, plane) \
            if (!read_exact(port##_buf.data(), port##_buf.size())) return 1;
            FOR_INPUTS(READ)
        }
        for (uint32_t s = 0; s < steps; s++) {
            if (aligned) {
                index_planes(head[0] + uint64_t(s) * LANES, lane_bits, in);
            } else {
#define IN(port, row, cb, slots, width, plane) \
                to_planes(port##_buf.data() + s * port##_row, cb, slots, width, in + (plane));
                FOR_INPUTS(IN)
            }
            eval_gates(in, out);
#define OUT(port, row, cb, slots, width, plane) \
            from_planes(out + (plane), cb, slots, width, port##_out + s * port##_row);
            FOR_OUTPUTS(OUT)
        }
        if (shm) {
            const uint32_t done = steps * LANES;
            write_exact(&done, 4);
        } else {
#define WRITE(port, row, cb, slots, width, plane) \
            write_exact(port##_buf.data(), steps * port##_row);
            FOR_OUTPUTS(WRITE)
        }
        fflush(stdout);
    }
    return 0;
}
