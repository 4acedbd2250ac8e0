// General strided copy of whole words: `Word` is u32 (4- and 8-byte elements, and aligned
// rows of smaller ones) or vec4<u32> (16-byte aligned contiguous rows). The backend
// prepends `alias Word`, the `src`/`dst` bindings and `load_src`, then pieces.wgsl.
// One thread moves PER_THREAD elements of one piece, THREADS apart.

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
        dst[w.dst] = load_src(w.src);
        walk_on(&p, &w);
    }
}
