// Rows of whole 4-byte words at word-aligned starts (the backend checks): a workgroup moves
// up to 1024 words of one row with plain loads and stores; its first invocation locates the
// row (and, for a scatter whose targets may meet, whether it wins its slot). `dst` is
// array<u32>. info[16] is the grid's x size in workgroups.

const ROW_WORDS_PER_GROUP: i32 = 1024;

var<workgroup> row_at: vec3<i32>;  // (moves: 1 or 0, source word, destination word)

@compute @workgroup_size(256)
fn rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = i32(wg.y * u32(info[16]) + wg.x);
    let words = info[2] * info[3] / 4;
    let chunks = (words + ROW_WORDS_PER_GROUP - 1) / ROW_WORDS_PER_GROUP;
    let m = group / chunks;
    if (lid == 0u) {
        var moves = 0;
        var s = 0;
        var d = 0;
        if (m < info[14]) {
            let r = locate(m);
            let wins = info[15] == 0 || atomicLoad(&winner[r.slot]) == r.order + 1;
            moves = select(0, 1, r.ok && wins);
            if (moves == 1 && info[15] > 0 && info[18] != 0) {  // (the row's only workgroup)
                atomicStore(&winner[r.slot], 0);
            }
            s = (info[9] + r.src * info[3]) / 4;
            d = (info[10] + r.dst * info[3]) / 4;
        }
        row_at = vec3<i32>(moves, s, d);
    }
    let at = workgroupUniformLoad(&row_at);
    if (at.x == 0) {
        return;
    }
    let first = (group - m * chunks) * ROW_WORDS_PER_GROUP;
    for (var j = 0; j < 4; j++) {
        let w = first + j * 256 + i32(lid);
        if (w < words) {
            dst[u32(at.z + w)] = load_src(u32(at.y + w));
        }
    }
}
