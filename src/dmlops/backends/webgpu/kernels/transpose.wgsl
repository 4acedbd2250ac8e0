// Tiled transpose: copies whose source and destination unit-stride axes differ (slices of
// transposed or permuted views). A piece's dimension 0 is the destination's unit-stride
// axis, dimension 1 the source's; a workgroup moves one 32 x 32 tile of them for one index
// of the outer dimensions: it reads rows along dimension 1 (contiguous in the source)
// into workgroup memory, then writes rows along dimension 0 (contiguous in the
// destination). `Word` is u32 (4-byte elements) or vec2<u32> (8-byte); offsets and
// strides are in Words. The backend prepends `alias Word`, the bindings and `load_src`,
// then pieces.wgsl.

var<workgroup> tile: array<array<Word, 33>, 32>;

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.y * header.grid_x + wg.x;
    if (t >= header.tiles) {
        return;
    }
    let k = find_piece(t);
    let ni = pieces[k].sizes[0];
    let nj = pieces[k].sizes[1];
    let across = (ni + 31u) / 32u;
    let down = (nj + 31u) / 32u;
    let local = t - pieces[k].tile_start;
    let i0 = (local % across) * 32u;
    let j0 = ((local / across) % down) * 32u;
    var outer = local / (across * down);
    var s = pieces[k].src_offset;
    var d = pieces[k].dst_offset;
    for (var x = 2u; x < DIMS; x++) {
        let n = pieces[k].sizes[x];
        let c = outer % n;
        outer = outer / n;
        s += c * pieces[k].src_strides[x];
        d += c * pieces[k].dst_strides[x];
    }
    let si = pieces[k].src_strides[0];
    let sj = pieces[k].src_strides[1];
    let di = pieces[k].dst_strides[0];
    let dj = pieces[k].dst_strides[1];
    for (var r = 0u; r < 32u; r += 8u) {
        let i = i0 + lid.y + r;
        let j = j0 + lid.x;
        if (i < ni && j < nj) {
            tile[lid.y + r][lid.x] = load_src(s + i * si + j * sj);
        }
    }
    workgroupBarrier();
    for (var r = 0u; r < 32u; r += 8u) {
        let j = j0 + lid.y + r;
        let i = i0 + lid.x;
        if (i < ni && j < nj) {
            dst[d + i * di + j * dj] = tile[lid.x][lid.y + r];
        }
    }
}
