// 1- and 2-byte elements written whole destination words at a time: rows whose
// destination is contiguous (any source stride, negative included). One invocation owns
// two destination words of a row (half a row apart), gathers the elements that land in
// them and stores each word whole; only the up to two words a row shares with its
// neighbours at its ends are merged (atomicAnd / atomicOr). A piece's dimension 0 counts half the words
// a row can touch, with strides 0 (the walk stays at the row's first byte); pad0 is the
// row's length in elements, pad1 the source's inner stride in bytes (an i32 bit
// pattern); offsets are bytes. A whole word goes through `whole_words` (the destination
// bound again as plain words: an atomic store would cost an atomic operation), a shared
// one through `dst`.
// The backend prepends the `src`/`dst`/`whole_words` bindings and `load_src`, then
// pieces.wgsl, elements.wgsl (whose entry point calls copy_at) and subword.wgsl.

// The element size in bytes (1 or 2): the pipeline is specialised to it.
override ES: u32 = 2u;

// A destination word, its value and the bytes of it the copy writes (mask 0: none).
struct Packed {
    word: u32,
    value: u32,
    mask: u32,
}

fn gather(p: ptr<function, Piece>, w: ptr<function, Walk>, word: u32) -> Packed {
    let d = (*w).dst;
    let es = ES;
    let end = d + (*p).pad0 * es;
    let lo = max(word * 4u, d);
    let hi = min(word * 4u + 4u, end);
    if (lo >= hi) {
        return Packed(word, 0u, 0u);
    }
    let shift = es >> 1u;  // log2 of 1 or 2
    let stride = (*p).pad1;
    let first = (lo - d) >> shift;
    if (hi - lo == 4u && (first << shift) == lo - d) {  // a whole word of whole elements
        let at = (*w).src + first * stride;
        var whole = source_bits(at, es) | (source_bits(at + stride, es) << (es * 8u));
        if (es == 1u) {
            whole |= (source_bits(at + 2u * stride, 1u) << 16u)
                | (source_bits(at + 3u * stride, 1u) << 24u);
        }
        return Packed(word, whole, 0xffffffffu);
    }
    var value = 0u;
    var b = lo;
    while (b < hi) {
        let k = (b - d) >> shift;  // the element, and the byte within it
        let within = (b - d) - (k << shift);
        let take = min(es - within, hi - b);
        value |= source_bits((*w).src + k * stride + within, take) << ((b & 3u) * 8u);
        b += take;
    }
    if (hi - lo == 4u) {
        return Packed(word, value, 0xffffffffu);
    }
    return Packed(word, value, ((1u << ((hi - lo) * 8u)) - 1u) << ((lo & 3u) * 8u));
}

fn put(m: Packed) {
    if (m.mask == 0xffffffffu) {
        whole_words[m.word] = m.value;
    } else if (m.mask != 0u) {
        atomicAnd(&dst[m.word], ~m.mask);
        atomicOr(&dst[m.word], m.value);
    }
}

// Two destination words of a row, k and k + (the walked half of the row's words): both
// gathered (their loads in flight together), then both stored; neighbouring invocations
// move neighbouring words.
fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let first = ((*w).dst >> 2u) + (*w).index[0];
    let a = gather(p, w, first);
    let b = gather(p, w, first + (*p).sizes[0]);
    put(a);
    put(b);
}
