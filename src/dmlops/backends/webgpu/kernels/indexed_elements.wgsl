// One element per invocation, bit-exact for 1-, 2-, 4- and 8-byte elements at any alignment:
// destination words are written through merge.wgsl (`dst` is array<atomic<u32>>).

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = item_of(wg, lid);
    let row = info[2];
    if (i >= info[14] * row) {
        return;
    }
    let m = i / row;
    let e = i - m * row;
    let r = locate(m);
    if (!r.ok) {
        return;
    }
    if (info[15] > 0) {
        if (atomicLoad(&winner[r.slot]) != r.order + 1) {
            return;
        }
        if (info[18] != 0) {  // (a row of one element: this invocation is the whole row)
            atomicStore(&winner[r.slot], 0);
        }
    }
    let size = u32(info[3]);
    let s = u32(info[9] + (r.src + e * info[12]) * info[3]);
    let d = u32(info[10] + (r.dst + e * info[13]) * info[3]);
    for (var word = d >> 2u; word <= (d + size - 1u) >> 2u; word++) {
        merge_word(word, d, s, size);
    }
}
