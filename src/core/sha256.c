/*
 * sha256.c -- SHA-256 (FIPS 180-4), for the keys of the code caches and
 * the fingerprints of ahead-of-time code.  Small and dependency-free.  An
 * ahead-of-time wrapper hashes its C when it is made (8.6 KB for case E),
 * so the rounds are unrolled by eight, which spares the moves of the
 * working variables: a block of 64 bytes takes about 3,200 instructions,
 * where a round at a time would take about 4,000.
 */
#include <string.h>

#include "core.h"

static const uint32_t wb_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t wb_rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

/* One round, with the eight working variables named where they stand in
   it: eight rounds in a row name them in turn, so that no round moves
   them (a loop of one round spends eight moves a round on that). */
#define WB_SHA256_ROUND(a, b, c, d, e, f, g, h, i)                          \
    do {                                                                    \
        uint32_t t1 = h + (wb_rotr(e, 6) ^ wb_rotr(e, 11) ^ wb_rotr(e, 25)) + \
                      (g ^ (e & (f ^ g))) + wb_sha256_k[i] + w[i];          \
        uint32_t t2 = (wb_rotr(a, 2) ^ wb_rotr(a, 13) ^ wb_rotr(a, 22)) +   \
                      ((a & b) | (c & (a | b)));                            \
        d += t1;                                                            \
        h = t1 + t2;                                                        \
    } while (0)

static void wb_sha256_block(uint32_t hs[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = wb_rotr(w[i - 15], 7) ^ wb_rotr(w[i - 15], 18) ^
                      w[i - 15] >> 3;
        uint32_t s1 = wb_rotr(w[i - 2], 17) ^ wb_rotr(w[i - 2], 19) ^
                      w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3];
    uint32_t e = hs[4], f = hs[5], g = hs[6], h = hs[7];
    for (int i = 0; i < 64; i += 8) {
        WB_SHA256_ROUND(a, b, c, d, e, f, g, h, i);
        WB_SHA256_ROUND(h, a, b, c, d, e, f, g, i + 1);
        WB_SHA256_ROUND(g, h, a, b, c, d, e, f, i + 2);
        WB_SHA256_ROUND(f, g, h, a, b, c, d, e, i + 3);
        WB_SHA256_ROUND(e, f, g, h, a, b, c, d, i + 4);
        WB_SHA256_ROUND(d, e, f, g, h, a, b, c, i + 5);
        WB_SHA256_ROUND(c, d, e, f, g, h, a, b, i + 6);
        WB_SHA256_ROUND(b, c, d, e, f, g, h, a, i + 7);
    }
    hs[0] += a, hs[1] += b, hs[2] += c, hs[3] += d;
    hs[4] += e, hs[5] += f, hs[6] += g, hs[7] += h;
}

void wb_sha256_init(wb_sha256 *s)
{
    static const uint32_t h0[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
}

void wb_sha256_update(wb_sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        size_t at = (size_t)(s->len % 64), take = 64 - at < n ? 64 - at : n;
        memcpy(s->block + at, p, take);
        s->len += take, p += take, n -= take;
        if (s->len % 64 == 0)
            wb_sha256_block(s->h, s->block);
    }
}

void wb_sha256_hex(wb_sha256 *s, char out[WB_FINGERPRINT_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    uint64_t bits = s->len * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = 64 - (size_t)(s->len % 64);
    if (npad < 9)
        npad += 64;
    for (int i = 0; i < 8; i++)
        pad[npad - 1 - (size_t)i] = (uint8_t)(bits >> (8 * i));
    wb_sha256_update(s, pad, npad);
    for (int i = 0; i < 32; i++) {
        uint8_t byte = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
        out[2 * i] = digits[byte >> 4];
        out[2 * i + 1] = digits[byte & 15];
    }
    out[WB_FINGERPRINT_LEN] = '\0';
}

void wb_sha256_str(const void *data, size_t n, char out[WB_FINGERPRINT_LEN + 1])
{
    wb_sha256 s;
    wb_sha256_init(&s);
    wb_sha256_update(&s, data, n);
    wb_sha256_hex(&s, out);
}
