// Reading 1- and 2-byte elements out of the u32 words `load_src` gives (the packed
// kernels).

// `take` (1 or 2) source bytes from byte `at` on, in the low bits.
fn source_bits(at: u32, take: u32) -> u32 {
    let shift = (at & 3u) * 8u;
    var v = load_src(at >> 2u) >> shift;
    if (shift + take * 8u > 32u) {
        v |= load_src((at >> 2u) + 1u) << (32u - shift);
    }
    return v & ((1u << (take * 8u)) - 1u);
}
