// The entry point of the element-wise kernels (strided, bytes, rows, rows16): a workgroup
// moves one tile of TILE elements of one piece, each thread PER_THREAD of them, THREADS
// apart. The kernel file defines `copy_at(piece, walk)`, which moves the element (or
// word, or block) the walk is at.

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
        copy_at(&p, &w);
        walk_on(&p, &w);
    }
}
