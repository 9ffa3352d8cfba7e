/* fuzz_record_file.c — any bytes as a record file (core/record_file.h: the
 * journal's and the audit log's storage) read back after a crash.
 *
 * Input: the file's bytes. Checked: the reading is whole, a torn tail or
 * damage, never a crash or a read past the end; a whole reading covers the
 * file; what a torn tail keeps (the file cut at its last whole record) reads
 * back whole with the same records, and no whole record starts anywhere in
 * what it cuts; damage is somewhere inside the file;
 * the records read, framed again, make a file that reads back whole with the
 * same records.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/record_file.h"
#include "fuzz.h"

typedef struct records {
    const unsigned char *at[4096];
    size_t len[4096];
    size_t count;
} records;

static bool keep(const unsigned char *record, size_t len, uint64_t offset, void *context) {
    (void)offset;
    records *r = context;
    if (r->count < 4096) {
        r->at[r->count] = record;
        r->len[r->count] = len;
    }
    r->count++;
    return true;
}

static void same_records(const records *a, const records *b) {
    FUZZ_CHECK(a->count == b->count);
    for (size_t i = 0; i < a->count && i < 4096; i++)
        FUZZ_CHECK(a->len[i] == b->len[i] && memcmp(a->at[i], b->at[i], a->len[i]) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *file = (unsigned char *)fuzz_copy(data, size);
    static records first, again;
    first.count = again.count = 0;
    rl__records_scan scan;
    rl__records_read(file, size, keep, &first, &scan);
    FUZZ_CHECK(scan.whole_bytes <= size && scan.records == first.count);
    FUZZ_CHECK_TEXT(scan.why);
    if (scan.verdict == RL__RECORDS_WHOLE) {
        FUZZ_CHECK(scan.whole_bytes == size);
    } else {
        FUZZ_CHECK(scan.verdict == RL__RECORDS_TORN_TAIL || scan.verdict == RL__RECORDS_DAMAGED);
        FUZZ_CHECK(scan.bad_offset < size && scan.why[0] != '\0');
        FUZZ_CHECK(scan.bad_offset >= scan.whole_bytes || scan.whole_bytes == 0);
    }
    if (scan.verdict == RL__RECORDS_TORN_TAIL) { /* what opening keeps reads back whole */
        /* and nothing it cuts holds a whole record: a torn tail is only ever the last one */
        for (size_t at = scan.bad_offset + 1; at + RL__RECORD_FRAME_BYTES < size; at++) {
            rl__records_scan one;
            unsigned char *framed = malloc(RL__RECORD_FILE_HEADER_BYTES + size - at);
            if (framed == NULL) abort();
            memcpy(framed, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES);
            memcpy(framed + RL__RECORD_FILE_HEADER_BYTES, file + at, size - at);
            rl__records_read(framed, RL__RECORD_FILE_HEADER_BYTES + size - at, NULL, NULL, &one);
            FUZZ_CHECK(one.records == 0);
            free(framed);
        }
        rl__records_scan cut;
        rl__records_read(file, scan.whole_bytes, keep, &again, &cut);
        FUZZ_CHECK(cut.verdict == RL__RECORDS_WHOLE && cut.whole_bytes == scan.whole_bytes);
        same_records(&first, &again);
    }
    if (first.count > 0 && first.count <= 4096) { /* framed again by the writer's own framing */
        size_t total = RL__RECORD_FILE_HEADER_BYTES;
        for (size_t i = 0; i < first.count; i++) total += RL__RECORD_FRAME_BYTES + first.len[i];
        unsigned char *copy = malloc(total);
        if (copy == NULL) abort();
        memcpy(copy, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES);
        size_t at = RL__RECORD_FILE_HEADER_BYTES;
        for (size_t i = 0; i < first.count; i++) at += rl__record_frame(copy + at, first.at[i], first.len[i]);
        again.count = 0;
        rl__records_scan rescan;
        rl__records_read(copy, total, keep, &again, &rescan);
        FUZZ_CHECK(rescan.verdict == RL__RECORDS_WHOLE && rescan.whole_bytes == total);
        same_records(&first, &again);
        free(copy);
    }
    free(file);
    return 0;
}
