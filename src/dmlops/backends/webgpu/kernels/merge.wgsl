// Writing bytes into destination words exactly, for bytes.wgsl and rows.wgsl. WGSL storage
// has no 8- or 16-bit types, so a destination word is written whole (atomicStore) when the
// bytes cover it, else merged with atomicAnd then atomicOr: copies sharing a word change
// disjoint bytes, so any order gives the same bits. `dst` is array<atomic<u32>>,
// `load_src` reads u32 words; offsets are bytes. The backend prepends source_word.wgsl.

fn source_byte(at: u32) -> u32 {
    return (load_src(at >> 2u) >> ((at & 3u) * 8u)) & 0xffu;
}

// Write the bytes of [d, d + length) that fall in destination word `word`, byte b read
// from source byte s + (b - d).
fn merge_word(word: u32, d: u32, s: u32, length: u32) {
    let lo = max(word * 4u, d);
    let hi = min(word * 4u + 4u, d + length);
    if (lo >= hi) {
        return;
    }
    if (hi - lo == 4u) {
        atomicStore(&dst[word], source_word(s + (lo - d)));
        return;
    }
    var value = 0u;
    var mask = 0u;
    for (var byte = lo; byte < hi; byte++) {
        value |= source_byte(s + (byte - d)) << ((byte & 3u) * 8u);
        mask |= 0xffu << ((byte & 3u) * 8u);
    }
    atomicAnd(&dst[word], ~mask);
    atomicOr(&dst[word], value);
}
