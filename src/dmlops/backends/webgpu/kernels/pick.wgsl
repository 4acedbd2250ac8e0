// Every R-th element of a row (R = 2 or 4: a slice with an inner stride of +-2 or +-4;
// 1-, 2- and 4-byte elements, and 8-byte ones at R = 2), written whole 16-byte vectors: an
// invocation reads the R source vectors that hold one destination vector's elements and
// picks them out in registers (constant lanes and shifts: no atomics, no partial words).
// The elements picked are those P elements into each group of R (the phase of the row's
// start); a backwards row (REVERSE) reads its groups from the highest down and puts each
// vector's elements back in order with reorder.wgsl. Rows are whole destination vectors
// at 16-byte aligned offsets; units are vectors: dimension 0 steps the source by R vectors
// (-R backwards) and the destination by one. The backend prepends `alias Word =
// vec4<u32>`, the `src`/`dst` bindings, `load_src` and reorder.wgsl, then pieces.wgsl and
// elements.wgsl (whose entry point calls copy_at), and sets ES, R, P and REVERSE here.

const ES: u32 = 2u;  // element bytes
const R: u32 = 2u;  // source elements per destination element
const P: u32 = 0u;  // the element picked in each group of R
const REVERSE: bool = false;
// the vector lanes read (kept inside a vector in the branches other element sizes take)
const L0: u32 = select(P, 2u * P, ES == 8u) & 3u;
const L1: u32 = (2u * P + 1u) & 3u;
const L2: u32 = (P + 2u) & 3u;
const H0: u32 = (P / 2u) & 3u;
const H2: u32 = (P / 2u + 2u) & 3u;

// the half (P of 2) of two words, as one word
fn halves(a: u32, b: u32, p: u32) -> u32 {
    return ((a >> (16u * p)) & 0xffffu) | (((b >> (16u * p)) & 0xffffu) << 16u);
}

// bytes p and p + 2 of a word, as 16 bits
fn alternate_bytes(a: u32, p: u32) -> u32 {
    let w = a >> (8u * p);
    return (w & 0xffu) | ((w >> 8u) & 0xff00u);
}

// byte p of each of a vector's words, as one word
fn one_byte_each(v: vec4<u32>, p: u32) -> u32 {
    let w = v >> vec4<u32>(8u * p);
    return (w.x & 0xffu) | ((w.y & 0xffu) << 8u) | ((w.z & 0xffu) << 16u) | ((w.w & 0xffu) << 24u);
}

fn in_order(v: vec4<u32>) -> vec4<u32> {
    if (!REVERSE) {
        return v;
    }
    if (ES == 1u) {
        return reverse_bytes(v);
    }
    if (ES == 2u) {
        return reverse_halves(v);
    }
    if (ES == 4u) {
        return reverse_words(v);
    }
    return reverse_pairs(v);
}

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    let a = load_src(s);
    let b = load_src(s + 1u);
    var out: vec4<u32>;
    if (ES == 8u) {  // R = 2: words 2P and 2P + 1 of each vector
        out = vec4<u32>(a[L0], a[L1], b[L0], b[L1]);
    } else if (R == 2u) {
        if (ES == 4u) {
            out = vec4<u32>(a[L0], a[L2], b[L0], b[L2]);
        } else if (ES == 2u) {  // half P of each word
            out = vec4<u32>(halves(a.x, a.y, P), halves(a.z, a.w, P), halves(b.x, b.y, P), halves(b.z, b.w, P));
        } else {  // bytes P and P + 2 of each word
            out = vec4<u32>(
                alternate_bytes(a.x, P) | (alternate_bytes(a.y, P) << 16u),
                alternate_bytes(a.z, P) | (alternate_bytes(a.w, P) << 16u),
                alternate_bytes(b.x, P) | (alternate_bytes(b.y, P) << 16u),
                alternate_bytes(b.z, P) | (alternate_bytes(b.w, P) << 16u),
            );
        }
    } else {
        let c = load_src(s + 2u);
        let d = load_src(s + 3u);
        if (ES == 4u) {
            out = vec4<u32>(a[L0], b[L0], c[L0], d[L0]);
        } else if (ES == 2u) {  // half P % 2 of words P / 2 and P / 2 + 2
            out = vec4<u32>(halves(a[H0], a[H2], P % 2u), halves(b[H0], b[H2], P % 2u),
                            halves(c[H0], c[H2], P % 2u), halves(d[H0], d[H2], P % 2u));
        } else {  // byte P of every word
            out = vec4<u32>(one_byte_each(a, P), one_byte_each(b, P), one_byte_each(c, P), one_byte_each(d, P));
        }
    }
    dst[(*w).dst] = in_order(out);
}
