// Every R-th element of a row of 1- or 2-byte elements (R = 2 or 4: a slice with an inner
// stride of 2 or 4), written whole 16-byte vectors: an invocation reads the R source
// vectors that hold one destination vector's elements and picks them out in registers
// (no atomics, no partial words). Rows are whole destination vectors at 16-byte aligned
// offsets; units are vectors: dimension 0 steps the source R vectors and the destination
// one. The backend prepends `alias Word = vec4<u32>`, the `src`/`dst` bindings and
// `load_src`, then pieces.wgsl and elements.wgsl (whose entry point calls copy_at), and
// sets ES and R here.

const ES: u32 = 2u;  // element bytes
const R: u32 = 2u;  // source elements per destination element

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    var v: array<vec4<u32>, R>;
    for (var k = 0u; k < R; k++) {  // the loads first, all in flight together
        v[k] = load_src(s + k);
    }
    var out = vec4<u32>(0u);
    for (var i = 0u; i < 4u; i++) {  // each destination word, byte by byte
        var word = 0u;
        for (var b = 0u; b < 4u; b += ES) {
            let e = (4u * i + b) / ES;  // the destination element
            let at = e * ES * R;  // its source byte in the vectors read
            let bits = (v[at >> 4u][(at >> 2u) & 3u] >> ((at & 3u) * 8u)) & ((1u << (ES * 8u)) - 1u);
            word |= bits << (b * 8u);
        }
        out[i] = word;
    }
    dst[(*w).dst] = out;
}
