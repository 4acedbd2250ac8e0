// Every R-th element of a row (R = 2 or 4: a slice with an inner stride of 2 or 4; 1-, 2-
// and 4-byte elements, and 8-byte ones at R = 2), written whole 16-byte vectors: an invocation reads the R source
// vectors that hold one destination vector's elements and picks them out in registers
// (constant lanes and shifts: no atomics, no partial words, no indexed local arrays).
// Rows are whole destination vectors at 16-byte aligned offsets; units are vectors:
// dimension 0 steps the source R vectors and the destination one. The backend prepends
// `alias Word = vec4<u32>`, the `src`/`dst` bindings and `load_src`, then pieces.wgsl and
// elements.wgsl (whose entry point calls copy_at), and sets ES and R here.

const ES: u32 = 2u;  // element bytes
const R: u32 = 2u;  // source elements per destination element

// the low halves of two words, as one
fn halves(a: u32, b: u32) -> u32 {
    return (a & 0xffffu) | (b << 16u);
}

// bytes 0 and 2 of a word, as 16 bits
fn even_bytes(a: u32) -> u32 {
    return (a & 0xffu) | ((a >> 8u) & 0xff00u);
}

// byte 0 of each of a vector's words, as one word
fn first_bytes(v: vec4<u32>) -> u32 {
    return (v.x & 0xffu) | ((v.y & 0xffu) << 8u) | ((v.z & 0xffu) << 16u) | (v.w << 24u);
}

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    let a = load_src(s);
    let b = load_src(s + 1u);
    var out: vec4<u32>;
    if (ES == 8u) {  // the first two words of each vector (R = 2)
        out = vec4<u32>(a.x, a.y, b.x, b.y);
    } else if (ES == 4u && R == 2u) {
        out = vec4<u32>(a.x, a.z, b.x, b.z);
    } else if (R == 2u) {
        if (ES == 2u) {  // elements 0, 2, 4, 6 of each vector: the low halves of its words
            out = vec4<u32>(halves(a.x, a.y), halves(a.z, a.w), halves(b.x, b.y), halves(b.z, b.w));
        } else {  // bytes 0 and 2 of each word
            out = vec4<u32>(
                even_bytes(a.x) | (even_bytes(a.y) << 16u),
                even_bytes(a.z) | (even_bytes(a.w) << 16u),
                even_bytes(b.x) | (even_bytes(b.y) << 16u),
                even_bytes(b.z) | (even_bytes(b.w) << 16u),
            );
        }
    } else {
        let c = load_src(s + 2u);
        let d = load_src(s + 3u);
        if (ES == 4u) {
            out = vec4<u32>(a.x, b.x, c.x, d.x);
        } else if (ES == 2u) {  // the low halves of every other word
            out = vec4<u32>(halves(a.x, a.z), halves(b.x, b.z), halves(c.x, c.z), halves(d.x, d.z));
        } else {  // byte 0 of every word
            out = vec4<u32>(first_bytes(a), first_bytes(b), first_bytes(c), first_bytes(d));
        }
    }
    dst[(*w).dst] = out;
}
