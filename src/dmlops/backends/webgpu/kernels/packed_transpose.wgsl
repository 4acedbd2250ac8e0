// Tiled transpose of 1- and 2-byte elements: copies whose destination rows are contiguous
// (dimension 0) while the source's unit-stride axis is dimension 1 (slices of transposed
// or permuted views). A workgroup moves one tile of 64 elements along dimension 0 by 32
// source words along dimension 1 (64 two-byte or 128 one-byte elements) for one index of
// the outer dimensions: it reads whole source words along dimension 1 (one load where the
// rows are word-aligned and ascending, else element by element) into workgroup memory,
// then writes whole destination words, each gathering the 2 or 4 elements it holds; only
// a word a tile shares with its neighbour or the row's ends is merged atomically (through
// `dst`; whole words through `whole_words`, the destination bound again as plain words).
// Offsets and strides are bytes (i32 bit patterns). The backend prepends the
// `src`/`dst`/`whole_words` bindings and `load_src`, then pieces.wgsl and subword.wgsl.

override ES: u32 = 2u;  // the element size in bytes (1 or 2): the pipeline is specialised
const TI: u32 = 64u;  // tile extent along dimension 0 (destination rows), in elements

var<workgroup> tile: array<array<u32, 33>, 64>;  // [i][j / per_word]: source words

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.y * header.grid_x + wg.x;
    if (t >= header.tiles) {
        return;
    }
    let k = find_piece(t);
    let es = ES;
    let shift = es >> 1u;  // log2 of 1 or 2
    let per_word = 4u >> shift;  // elements in a word
    let bits = es * 8u;
    let tj = 32u * per_word;  // tile extent along dimension 1, in elements
    let ni = pieces[k].sizes[0];
    let nj = pieces[k].sizes[1];
    let at = tile_at(k, t, TI, tj);
    let i0 = at.i0;
    let j0 = at.j0;
    let s = at.src;
    let d = at.dst;
    let si = pieces[k].src_strides[0];
    let sj = pieces[k].src_strides[1];
    let dj = pieces[k].dst_strides[1];
    let whole_loads = sj == es && ((s + j0 * es) & 3u) == 0u && (si & 3u) == 0u;
    let j = j0 + lid.x * per_word;  // the first element of this thread's source word
    for (var r = 0u; r < TI; r += 8u) {
        let i = i0 + lid.y + r;
        if (i < ni && j < nj) {
            let at = s + i * si + j * sj;
            var word = 0u;
            if (whole_loads) {
                word = load_src(at >> 2u);  // elements past the row's end are never written
            } else {
                for (var m = 0u; m < per_word; m++) {
                    word |= source_bits(at + m * sj, es) << (m * bits);
                }
            }
            tile[lid.y + r][lid.x] = word;
        }
    }
    workgroupBarrier();
    let i_end = min(i0 + TI, ni);
    let emask = (1u << bits) - 1u;
    if (((d + i0 * es) & 3u) == 0u && (dj & 3u) == 0u) {  // every tile row starts a word
        // thread (x, y): word x of destination rows y, y + 8, ... (1-byte elements: 16
        // words a row, two rows per pass)
        let words = TI / per_word;
        let x = lid.x % words;
        for (var jj = lid.y * (32u / words) + lid.x / words; jj < tj; jj += 8u * (32u / words)) {
            let jr = j0 + jj;
            let e = x * per_word;
            if (jr >= nj || i0 + e >= i_end) {
                continue;
            }
            let n = min(per_word, i_end - i0 - e);
            let column = jj / per_word;
            let lane = (jj % per_word) * bits;
            var value = 0u;
            for (var m = 0u; m < n; m++) {
                value |= ((tile[e + m][column] >> lane) & emask) << (m * bits);
            }
            let word = ((d + jr * dj + i0 * es) >> 2u) + x;
            if (n == per_word) {
                whole_words[word] = value;
            } else {
                let mask = (1u << (n * bits)) - 1u;
                atomicAnd(&dst[word], ~mask);
                atomicOr(&dst[word], value);
            }
        }
        return;
    }
    // rows at any byte: up to 33 words a row touches (64 elements of 1 or 2 bytes)
    let lane_id = lid.y * 32u + lid.x;
    for (var q = lane_id; q < 33u * tj; q += 256u) {
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
        let column = jj / per_word;
        let lane = (jj % per_word) * bits;
        var value = 0u;
        var b = lo;
        while (b < hi) {
            let e = (b - row) >> shift;  // the element, and the byte within it
            let within = (b - row) - (e << shift);
            let take = min(es - within, hi - b);
            let element = (tile[e - i0][column] >> lane) & emask;
            value |= ((element >> (within * 8u)) & ((1u << (take * 8u)) - 1u)) << ((b & 3u) * 8u);
            b += take;
        }
        if (hi - lo == 4u) {
            whole_words[word] = value;
        } else {
            let mask = ((1u << ((hi - lo) * 8u)) - 1u) << ((lo & 3u) * 8u);
            atomicAnd(&dst[word], ~mask);
            atomicOr(&dst[word], value);
        }
    }
}
