// Strided copy of 1-, 2-, 4- or 8-byte elements at any byte offset, bit-exact. WGSL
// storage has no 8- or 16-bit types, so each destination u32 word an element touches is
// written whole (atomicStore) when the element covers it, else merged with atomicAnd then
// atomicOr: elements sharing a word change disjoint bytes, so any order gives the same bits.
// Offsets and strides are in bytes. The backend prepends the `src`/`dst` bindings (`dst`
// is array<atomic<u32>>) and `load_src` (u32 words), then pieces.wgsl.

fn source_byte(at: u32) -> u32 {
    return (load_src(at >> 2u) >> ((at & 3u) * 8u)) & 0xffu;
}

fn copy_element(s: u32, d: u32, size: u32) {
    for (var w = d >> 2u; w <= (d + size - 1u) >> 2u; w++) {
        var value = 0u;
        var mask = 0u;
        for (var b = 0u; b < 4u; b++) {
            let byte = w * 4u + b;
            if (byte >= d && byte < d + size) {
                value |= source_byte(s + (byte - d)) << (b * 8u);
                mask |= 0xffu << (b * 8u);
            }
        }
        if (mask == 0xffffffffu) {
            atomicStore(&dst[w], value);
        } else {
            atomicAnd(&dst[w], ~mask);
            atomicOr(&dst[w], value);
        }
    }
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
        copy_element(w.src, w.dst, p.element_bytes);
        walk_on(&p, &w);
    }
}
