// Contiguous rows of bytes at any source and destination alignment (1- and 2-byte
// elements, and rows whose offsets are not word aligned). A piece's dimension 0 counts the
// destination u32 words a row can touch, with strides of 4 bytes; element_bytes is the
// row's length in bytes. A thread owns one destination word: a word the row covers is
// assembled from two aligned source words with a funnel shift and stored whole; a word at
// a row's edge is merged byte by byte with atomicAnd and atomicOr (neighbouring rows may
// own its other bytes). Offsets are bytes. The backend prepends the `src`/`dst` bindings
// (`dst` is array<atomic<u32>>) and `load_src` (u32 words), then pieces.wgsl.

fn source_word(at: u32) -> u32 {
    let shift = (at & 3u) * 8u;
    let low = load_src(at >> 2u);
    if (shift == 0u) {
        return low;
    }
    return (low >> shift) | (load_src((at >> 2u) + 1u) << (32u - shift));
}

fn copy_word(s_row: u32, d_row: u32, length: u32, k: u32) {
    let word = (d_row >> 2u) + k;
    let lo = max(word * 4u, d_row);
    let hi = min(word * 4u + 4u, d_row + length);
    if (lo >= hi) {
        return;
    }
    if (lo == word * 4u && hi == word * 4u + 4u) {
        atomicStore(&dst[word], source_word(s_row + (lo - d_row)));
        return;
    }
    var value = 0u;
    var mask = 0u;
    for (var byte = lo; byte < hi; byte++) {
        let at = s_row + (byte - d_row);
        let b = (load_src(at >> 2u) >> ((at & 3u) * 8u)) & 0xffu;
        value |= b << ((byte & 3u) * 8u);
        mask |= 0xffu << ((byte & 3u) * 8u);
    }
    atomicAnd(&dst[word], ~mask);
    atomicOr(&dst[word], value);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = wg.y * header.grid_x + wg.x;
    if (tile >= header.tiles) {
        return;
    }
    var p = pieces[find_piece(tile)];
    let first = (tile - p.tile_start) * TILE + lid;
    if (first >= p.count) {
        return;
    }
    var w = walk_to(&p, first);
    for (var j = 0u; j < PER_THREAD; j++) {
        if (first + j * THREADS >= p.count) {
            return;
        }
        let k = w.index[0];
        copy_word(w.src - 4u * k, w.dst - 4u * k, p.element_bytes, k);
        walk_on(&p, &w);
    }
}
