// The pipe protocol of the native engines' simulation loops (native_main.cpp: Verilator's
// model; gates_main.cpp: the gate netlist): the block framing, the options, the exhaustive
// index's fields, the outputs' places. The protocol itself is described in native_main.cpp.
// Included after ports.h: LANES, FOR_INPUTS(X) and FOR_OUTPUTS(X) with X(port, row bytes), and
// FOR_FIELDS(X) with X(port, row, container bytes, slots per lane, slot, shift, width, first
// bit) where every input is a field of the exhaustive index.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>

#ifndef PROG         // the loop's name in its messages
#define PROG "native"
#endif
#ifndef FOR_FIELDS
#define FOR_FIELDS(X)
#define INDEX_MODE 0
#else
#define INDEX_MODE 1
#endif

static bool read_exact(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }

static void write_exact(const void* p, size_t n) {
    if (fwrite(p, 1, n, stdout) != n) { perror(PROG ": write"); exit(2); }
}

// `--index` (the inputs are the index split into fields) and `--shm FD SLOT` (the outputs in
// two slots of SLOT bytes of a shared memory file). False after a message if it cannot map FD.
struct RunOptions {
    bool index = false;
    uint8_t* shm = nullptr;
    size_t slot = 0;
    bool parse(int argc, char** argv) {
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--index")) {
                index = true;
            } else if (!strcmp(argv[i], "--shm") && i + 2 < argc) {
                slot = strtoull(argv[i + 2], 0, 10);
                void* m = mmap(nullptr, 2 * slot, PROT_READ | PROT_WRITE, MAP_SHARED,
                               atoi(argv[i + 1]), 0);
                if (m == MAP_FAILED) { perror(PROG ": mmap"); return false; }
                shm = static_cast<uint8_t*>(m);
                i += 2;
            }
        }
        if (index && !INDEX_MODE) {
            fprintf(stderr, PROG ": no exhaustive fields\n");
            return false;
        }
        return true;
    }
};

// A port's buffer (a block's rows), where its outputs go, and its row bytes.
#define DECLARE_PORT(port, row) std::vector<uint8_t> port##_buf; \
    uint8_t* port##_out = nullptr; const size_t port##_row = (row);
// Inside the block loop (steps, the options `run`, and `at`, the next place in the slot):
#define RESIZE_INPUT(port, row) port##_buf.resize(steps * port##_row);
#define PLACE_OUTPUT(port, row) \
    if (run.shm) { port##_out = run.shm + at; at += steps * port##_row; } \
    else { port##_buf.resize(steps * port##_row); port##_out = port##_buf.data(); }
#define READ_INPUT(port, row) if (!read_exact(port##_buf.data(), port##_buf.size())) return 1;
// `fast --bare`: a port's `block` rows of pseudo-random codes (x: the xorshift state), and the
// line it prints ("STEPS SECONDS SINK").
#define BARE_ROWS(port, row) std::vector<uint8_t> port##_bare(block * (row)); \
    const size_t port##_row = (row); \
    for (auto& c : port##_bare) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; c = uint8_t(x); }
static void print_bare(uint64_t steps, double seconds, uint64_t sink) {
    printf("%llu %.6f %llu\n", (unsigned long long)steps, seconds, (unsigned long long)(sink & 1));
}
// The run's start in main: every port's buffer, the options (exit 2 if they fail).
#define START_RUN() \
    FOR_INPUTS(DECLARE_PORT) \
    FOR_OUTPUTS(DECLARE_PORT) \
    RunOptions run; \
    if (!run.parse(argc, argv)) return 2;
// A block's start in main (block, steps and the options `run` in scope): the inputs' buffers
// sized, each output's place taken (in the slot of block % 2, or its buffer).
#define START_BLOCK() \
    FOR_INPUTS(RESIZE_INPUT) \
    size_t at = (block % 2) * run.slot; \
    FOR_OUTPUTS(PLACE_OUTPUT) \
    if (run.shm && at > (block % 2 + 1) * run.slot) { \
        fprintf(stderr, PROG ": a block of %u steps overflows its slot\n", steps); \
        return 2; \
    }
#define WRITE_OUTPUT(port, row) write_exact(port##_buf.data(), steps * port##_row);

// An exhaustive block's inputs from its index: field (port, row, container bytes, slots per
// lane, slot, shift, width, first bit) of tuple idx is (idx >> shift) & (2^width - 1), in
// container lane * slots + slot of the port's row; vector k of the block (lane k % LANES of step
// k / LANES) is tuple first + k, the last row padded with first + k % n. ``bufs`` and ``rows``:
// each field's port buffer and row bytes (FIELD_BUF, FIELD_ROW).
#define FIELD_BUF(port, row, cb, slots, slot, shift, width, bit) port##_buf.data(),
#define FIELD_ROW(port, row, cb, slots, slot, shift, width, bit) size_t(row),
static void fill_index(uint8_t* const* bufs, const size_t* rows, uint32_t steps, uint64_t first,
                       uint64_t n) {
    for (uint32_t s = 0; s < steps; s++)
        for (uint32_t j = 0; j < LANES; j++) {
            const uint64_t k = uint64_t(s) * LANES + j;
            const uint64_t idx = first + (k < n ? k : k % n);
            int f = 0;
#define FILL(port, row, cb, slots, slot, shift, width, bit) { \
            const uint32_t v = (shift) >= 64 ? 0 : uint32_t((idx >> ((shift) & 63)) & \
                ((uint64_t(1) << (width)) - 1)); \
            memcpy(bufs[f] + s * rows[f] + (j * (slots) + (slot)) * (cb), &v, cb); f++; }
            FOR_FIELDS(FILL)
            (void)idx; (void)f;
        }
    (void)bufs; (void)rows;
}
