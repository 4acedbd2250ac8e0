// Tiled transpose of 1- and 2-byte elements: copies whose destination rows are contiguous
// (dimension 0) while the source's unit-stride axis is dimension 1 (slices of transposed
// or permuted views). A workgroup moves one tile of 64 x 32 elements (64 along dimension
// 0) for one index of the outer dimensions: it reads along dimension 1 (contiguous in the
// source) into workgroup memory, then writes whole destination words, each gathering the
// 2 or 4 elements it holds; only a word a tile shares with its neighbour or the row's
// ends is merged atomically. Offsets and strides are bytes (i32 bit patterns). The backend
// prepends the `src`/`dst` bindings (dst: atomic words) and `load_src`, then pieces.wgsl.

const TI: u32 = 64u;  // tile extent along dimension 0 (destination rows)
const TJ: u32 = 32u;  // along dimension 1 (source rows)

var<workgroup> tile: array<array<u32, 33>, 64>;  // [i][j]: one element per u32

fn element_at(at: u32, es: u32) -> u32 {
    let shift = (at & 3u) * 8u;
    var v = load_src(at >> 2u) >> shift;
    if (shift + es * 8u > 32u) {
        v |= load_src((at >> 2u) + 1u) << (32u - shift);
    }
    return v & ((1u << (es * 8u)) - 1u);
}

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.y * header.grid_x + wg.x;
    if (t >= header.tiles) {
        return;
    }
    let k = find_piece(t);
    let es = pieces[k].element_bytes;
    let ni = pieces[k].sizes[0];
    let nj = pieces[k].sizes[1];
    let across = (ni + TI - 1u) / TI;
    let down = (nj + TJ - 1u) / TJ;
    let local = t - pieces[k].tile_start;
    let i0 = (local % across) * TI;
    let j0 = ((local / across) % down) * TJ;
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
    let dj = pieces[k].dst_strides[1];
    let j = j0 + lid.x;
    for (var r = 0u; r < TI; r += 8u) {
        let i = i0 + lid.y + r;
        if (i < ni && j < nj) {
            tile[lid.y + r][lid.x] = element_at(s + i * si + j * sj, es);
        }
    }
    workgroupBarrier();
    // destination row j: bytes [row + i0 * es, row + i_end * es) of this tile
    let i_end = min(i0 + TI, ni);
    let shift = es >> 1u;  // log2 of 1 or 2
    let lane = lid.y * 32u + lid.x;
    let per_word = 4u >> shift;  // elements in a word
    if (((d + i0 * es) & 3u) == 0u && (dj & 3u) == 0u) {  // every tile row starts a word
        // thread (x, y): word x of rows y, y + 8, ...; words with elements past the row's
        // end are merged
        for (var jj = lid.y; jj < TJ; jj += 8u) {
            let jr = j0 + jj;
            let i = i0 + lid.x * per_word;
            if (jr >= nj || lid.x * per_word >= TI || i >= i_end) {
                continue;
            }
            let word = ((d + jr * dj + i0 * es) >> 2u) + lid.x;
            let e = lid.x * per_word;
            let n = min(per_word, i_end - i);
            var value = 0u;
            for (var m = 0u; m < n; m++) {
                value |= tile[e + m][jj] << (m * es * 8u);
            }
            if (n == per_word) {
                atomicStore(&dst[word], value);
            } else {
                let mask = (1u << (n * es * 8u)) - 1u;
                atomicAnd(&dst[word], ~mask);
                atomicOr(&dst[word], value);
            }
        }
        return;
    }
    for (var q = lane; q < 33u * TJ; q += 256u) {
        let jj = q / 33u;
        let jr = j0 + jj;
        if (jr >= nj) {
            break;
        }
        let row = d + jr * dj;
        let start = row + i0 * es;
        let end = row + i_end * es;
        let word = (start >> 2u) + q % 33u;
        let lo = max(word * 4u, start);
        let hi = min(word * 4u + 4u, end);
        if (lo >= hi) {
            continue;
        }
        var value = 0u;
        var b = lo;
        while (b < hi) {
            let e = (b - row) >> shift;  // the element, and the byte within it
            let within = (b - row) - (e << shift);
            let take = min(es - within, hi - b);
            let bits = (tile[e - i0][jj] >> (within * 8u)) & ((1u << (take * 8u)) - 1u);
            value |= bits << ((b & 3u) * 8u);
            b += take;
        }
        if (hi - lo == 4u) {
            atomicStore(&dst[word], value);
        } else {
            let mask = ((1u << ((hi - lo) * 8u)) - 1u) << ((lo & 3u) * 8u);
            atomicAnd(&dst[word], ~mask);
            atomicOr(&dst[word], value);
        }
    }
}
