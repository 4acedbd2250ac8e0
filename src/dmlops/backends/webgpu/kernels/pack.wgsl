// 1- and 2-byte elements into a destination that is one contiguous run, from any strided
// source (high-rank boxes of short rows, rows read at a step): one invocation fills a
// whole 16-byte destination vector. It finds the source byte of the vector's first element
// with one division chain over the piece's sizes, walks the next ones by carrying through
// the dimensions (each element's source word loaded on its own: the loads are independent)
// and stores the vector whole; a thread's next vectors, THREADS on, are reached by adding
// that step's digits with carries; a last vector the run only partly fills is stored a word at a time (the
// run's length is whole words). The twin of the CUDA backend's pack.cu.
//
// Table: sizes, source strides in bytes (i32 bit patterns), innermost first; in place of
// the destination strides and steps each size's divider (magic, shift: n / size is
// (mul_high(n, magic) + n) >> shift for n < 2^31); src_offset in bytes, dst_offset in
// 16-byte vectors. The backend prepends the `src` /
// `dst` (array<vec4<u32>>) bindings and `load_src` (u32 words), then pieces.wgsl.

// The element size in bytes (1 or 2): the pipeline is specialised to it.
override ES: u32 = 2u;
// Elements a 16-byte vector holds (a constant of the pipeline: the loops over them unroll and
// the vector's words stay in registers).
override PER_VECTOR: u32 = 16u / ES;

// The high 32 bits of a * b.
fn mul_high(a: u32, b: u32) -> u32 {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let cross0 = a1 * b0;
    let cross1 = a0 * b1;
    let middle = ((a0 * b0) >> 16u) + (cross0 & 0xffffu) + (cross1 & 0xffffu);
    return a1 * b1 + (cross0 >> 16u) + (cross1 >> 16u) + (middle >> 16u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tile = wg.y * header.grid_x + wg.x;
    if (tile >= header.tiles) {
        return;
    }
    var p = pieces[find_piece(tile)];
    let per = PER_VECTOR;
    let vectors = (p.count + per - 1u) / per;
    let mask = (1u << (ES * 8u)) - 1u;
    let v0 = (tile - p.tile_start) * TILE + lid;
    if (v0 >= vectors) {
        return;
    }
    // the first vector's first element by one division chain, and THREADS vectors in the
    // piece's mixed radix by another: the thread's next vectors are carried to, not divided
    var start: array<u32, 8>;
    var step: array<u32, 8>;
    var rest = v0 * per;
    var stride = THREADS * per;
    var base = p.src_offset;
    for (var d = 0u; d < DIMS; d++) {
        let quotient = (mul_high(rest, p.dst_strides[d]) + rest) >> p.steps[d];
        start[d] = rest - quotient * p.sizes[d];
        rest = quotient;
        base += start[d] * p.src_strides[d];
        let whole = (mul_high(stride, p.dst_strides[d]) + stride) >> p.steps[d];
        step[d] = stride - whole * p.sizes[d];
        stride = whole;
    }
    for (var r = 0u; r < PER_THREAD; r++) {
        let v = v0 + r * THREADS;
        if (v >= vectors) {
            return;
        }
        if (r > 0u) {  // THREADS vectors on: the step added with carries
            var carry = 0u;
            for (var d = 0u; d < DIMS; d++) {
                let old = start[d];
                var c = old + step[d] + carry;
                carry = 0u;
                if (c >= p.sizes[d] && d + 1u < DIMS) {
                    c -= p.sizes[d];
                    carry = 1u;
                }
                start[d] = c;
                base += (c - old) * p.src_strides[d];
            }
        }
        let first = v * per;
        var index = start;
        var at = base;
        let left = min(per, p.count - first);
        var out = vec4<u32>(0u);
        for (var e = 0u; e < PER_VECTOR; e++) {
            if (e >= left) {
                break;
            }
            let bit = e * ES * 8u;
            let word = load_src(at >> 2u);
            out[bit >> 5u] |= ((word >> ((at & 3u) * 8u)) & mask) << (bit & 31u);
            // the next element: the inner coordinate, carried outwards
            at += p.src_strides[0];
            index[0] += 1u;
            for (var d = 0u; d + 1u < DIMS; d++) {
                if (index[d] < p.sizes[d]) {
                    break;
                }
                at -= p.sizes[d] * p.src_strides[d];
                index[d] = 0u;
                index[d + 1u] += 1u;
                at += p.src_strides[d + 1u];
            }
        }
        let at_vector = p.dst_offset + v;
        if (left == per) {
            dst[at_vector] = out;
        } else {
            for (var q = 0u; q < left * ES / 4u; q++) {
                dst[at_vector][q] = out[q];
            }
        }
    }
}
