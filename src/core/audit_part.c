/* audit_part.c — see audit_part.h. */
#include "core/audit_part.h"

#include <dirent.h>
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error_text.h"
#include "core/record_file.h"
#include "core/regular_file.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* GDate counts days from 0001-01-01 (day 1); 1970-01-01 is its day 719163. */
#define JULIAN_OF_UNIX_EPOCH 719163

/* ---- names ------------------------------------------------------------------------ */

void rl__audit_part_name(int64_t day, uint32_t index, char out[RL__AUDIT_PART_NAME_SIZE]) {
    GDate date;
    g_date_clear(&date, 1);
    g_date_set_julian(&date, (guint32)(day + JULIAN_OF_UNIX_EPOCH));
    int year = g_date_get_year(&date), month = g_date_get_month(&date), mday = g_date_get_day(&date);
    if (index == 0)
        snprintf(out, RL__AUDIT_PART_NAME_SIZE, "%04d-%02d-%02d.audit", year, month, mday);
    else
        snprintf(out, RL__AUDIT_PART_NAME_SIZE, "%04d-%02d-%02d.%" PRIu32 ".audit", year, month, mday, index);
}

/* Exactly count decimal digits at text; false otherwise. */
static bool digits(const char *text, int count, unsigned *out) {
    unsigned value = 0;
    for (int i = 0; i < count; i++) {
        if (text[i] < '0' || text[i] > '9') return false;
        value = value * 10 + (unsigned)(text[i] - '0');
    }
    *out = value;
    return true;
}

bool rl__audit_part_parse(const char *name, rl__audit_part *out) {
    unsigned year, month, mday;
    if (!digits(name, 4, &year) || name[4] != '-' || !digits(name + 5, 2, &month) || name[7] != '-' ||
        !digits(name + 8, 2, &mday) || name[10] != '.')
        return false;
    if (year < 1970 || !g_date_valid_dmy((GDateDay)mday, (GDateMonth)month, (GDateYear)year)) return false;
    const char *rest = name + 11;
    uint64_t index = 0;
    if (strcmp(rest, "audit") != 0) {
        /* an index: 1.., no leading zero, then ".audit" */
        if (*rest < '1' || *rest > '9') return false;
        for (; *rest >= '0' && *rest <= '9'; rest++) {
            index = index * 10 + (uint64_t)(*rest - '0');
            if (index > UINT32_MAX) return false;
        }
        if (strcmp(rest, ".audit") != 0) return false;
    }
    GDate date;
    g_date_clear(&date, 1);
    g_date_set_dmy(&date, (GDateDay)mday, (GDateMonth)month, (GDateYear)year);
    out->day = (int64_t)g_date_get_julian(&date) - JULIAN_OF_UNIX_EPOCH;
    out->index = (uint32_t)index;
    out->size = RL__AUDIT_PART_SIZE_ALL;
    return true;
}

int rl__audit_part_compare(const rl__audit_part *a, const rl__audit_part *b) {
    if (a->day != b->day) return a->day < b->day ? -1 : 1;
    if (a->index != b->index) return a->index < b->index ? -1 : 1;
    return 0;
}

static int compare_parts(const void *a, const void *b) { return rl__audit_part_compare(a, b); }

char *rl__audit_part_path(const char *dir, int64_t day, uint32_t index) {
    char name[RL__AUDIT_PART_NAME_SIZE];
    rl__audit_part_name(day, index, name);
    char *path = NULL;
    return asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path;
}

rl_status rl__audit_parts_list(const char *dir, rl__audit_part **out, size_t *count, char *err, size_t err_size) {
    *out = NULL;
    *count = 0;
    DIR *listing = opendir(dir);
    if (listing == NULL) return fail(RL_IO_ERROR, err, err_size, "%s: cannot list: %s", dir, strerror(errno));
    rl__audit_part *parts = NULL;
    size_t n = 0, cap = 0;
    rl_status status = RL_OK;
    struct dirent *item;
    errno = 0;
    while ((item = readdir(listing)) != NULL) {
        rl__audit_part part;
        if (!rl__audit_part_parse(item->d_name, &part)) continue;
        if (n == cap) {
            cap = cap > 0 ? cap * 2 : 64;
            rl__audit_part *grown = realloc(parts, cap * sizeof *parts);
            if (grown == NULL) {
                status = fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", dir);
                break;
            }
            parts = grown;
        }
        parts[n++] = part;
    }
    if (status == RL_OK && errno != 0)
        status = fail(RL_IO_ERROR, err, err_size, "%s: cannot list: %s", dir, strerror(errno));
    closedir(listing);
    if (status != RL_OK) {
        free(parts);
        return status;
    }
    if (n > 1) qsort(parts, n, sizeof *parts, compare_parts);
    *out = parts;
    *count = n;
    return RL_OK;
}

/* ---- reading ---------------------------------------------------------------------- */

/* The first len bytes of the file open at fd into a malloc'd buffer. */
static unsigned char *read_prefix(int fd, size_t len) {
    unsigned char *data = malloc(len > 0 ? len : 1);
    if (data == NULL) return NULL;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, data + got, len - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { /* a read error, or the file shrank under us: what was read is all */
            if (n < 0) {
                free(data);
                return NULL;
            }
            break;
        }
        got += (size_t)n;
    }
    if (got < len) memset(data + got, 0, len - got); /* read as a torn tail of zeros */
    return data;
}

typedef struct reading {
    rl__audit_each_fn each;
    void *context;
    bool stopped;
    const char *refused; /* the decoder's phrase */
    uint64_t refused_at;
} reading;

static bool decode_one(const unsigned char *record, size_t len, uint64_t offset, void *context) {
    reading *r = context;
    rl__audit_view view;
    if (!rl__audit_record_decode(record, len, &view, &r->refused)) {
        r->refused_at = offset;
        return false;
    }
    if (!r->each(&view, offset, RL__RECORD_FRAME_BYTES + len, r->context)) {
        r->stopped = true;
        return false;
    }
    return true;
}

rl_status rl__audit_part_read(const char *path, uint64_t size, rl__audit_each_fn each, void *context, bool *missing,
                              char *err, size_t err_size) {
    *missing = false;
    struct stat st;
    int fd = rl__regular_file_open(path, &st, err, err_size);
    if (fd < 0 && errno == ENOENT) {
        *missing = true;
        return RL_OK;
    }
    if (fd < 0) return RL_IO_ERROR;
    uint64_t len = (uint64_t)st.st_size < size ? (uint64_t)st.st_size : size;
    if (len > RL__AUDIT_PART_READ_MAX_BYTES) {
        close(fd);
        return fail(RL_IO_ERROR, err, err_size,
                    "%s: damaged: %" PRIu64 " bytes, more than any file of the audit log holds (%u)", path, len,
                    (unsigned)RL__AUDIT_PART_READ_MAX_BYTES);
    }
    unsigned char *data = read_prefix(fd, (size_t)len);
    int saved = errno;
    close(fd);
    if (data == NULL)
        return saved == ENOMEM ? fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path)
                               : fail(RL_IO_ERROR, err, err_size, "%s: cannot read: %s", path, strerror(saved));
    reading r = {each, context, false, NULL, 0};
    rl__records_scan scan;
    rl__records_read(data, (size_t)len, decode_one, &r, &scan);
    free(data);
    if (scan.verdict != RL__RECORDS_DAMAGED || r.stopped) return RL_OK;
    if (r.refused != NULL)
        return fail(RL_IO_ERROR, err, err_size, "%s: damaged at offset %" PRIu64 " (an audit entry that cannot be read: %s)",
                    path, r.refused_at, r.refused);
    return fail(RL_IO_ERROR, err, err_size, "%s: damaged at offset %zu (%s)", path, scan.bad_offset, scan.why);
}

static bool take_first(const rl__audit_view *view, uint64_t offset, size_t frame_bytes, void *context) {
    (void)offset;
    (void)frame_bytes;
    *(uint64_t *)context = view->at_unix_ms;
    return false;
}

bool rl__audit_part_first_at(const char *path, uint64_t size, uint64_t *at_unix_ms) {
    /* The header and one record at its longest: the first record is whole in it, if there is one. */
    const uint64_t prefix = RL__RECORD_FILE_HEADER_BYTES + RL__RECORD_FRAME_BYTES + RL__AUDIT_RECORD_MAX_BYTES;
    uint64_t at = UINT64_MAX;
    bool missing;
    rl__audit_part_read(path, size < prefix ? size : prefix, take_first, &at, &missing, NULL, 0);
    if (at == UINT64_MAX) return false;
    *at_unix_ms = at;
    return true;
}
