/* record_file.c — see record_file.h. */
#include "core/record_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/error_text.h"
#include "core/regular_file.h"

#define fail(status, err, err_size, ...) (rl__error_text((err), (err_size), __VA_ARGS__), (status))

/* ---- framing and reading ------------------------------------------------------ */

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

size_t rl__record_frame(unsigned char *out, const void *record, size_t len) {
    put_le32(out, (uint32_t)len);
    memcpy(out + RL__RECORD_FRAME_BYTES, record, len);
    /* The length is checked too: a damaged length must not pass as another record. */
    uint32_t crc = rl__crc32c(rl__crc32c(0, out, 4), record, len);
    put_le32(out + 4, crc);
    return RL__RECORD_FRAME_BYTES + len;
}

static bool all_zero(const unsigned char *data, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (data[i] != 0) return false;
    return true;
}

static void verdict(rl__records_scan *out, rl__records_verdict v, size_t at, const char *why) {
    out->verdict = v;
    out->bad_offset = at;
    snprintf(out->why, sizeof out->why, "%s", why);
}

/* Whether a whole record starts at data[at..len): a length in range, a
 * frame that fits, a checksum that matches. */
static bool frame_at(const unsigned char *data, size_t len, size_t at) {
    if (len - at < RL__RECORD_FRAME_BYTES) return false;
    uint32_t n = le32(data + at);
    if (n < 1 || n > RL__RECORD_MAX_BYTES || n > len - at - RL__RECORD_FRAME_BYTES) return false;
    return rl__crc32c(rl__crc32c(0, data + at, 4), data + at + RL__RECORD_FRAME_BYTES, n) == le32(data + at + 4);
}

/* A crash cuts a file short; it never writes a whole record after a broken
 * one. So what looks like a torn tail at data[at] (a record running past
 * the end, a last checksum that fails) is one only if no whole record
 * starts at any later byte; otherwise a damaged length or checksum would
 * have the cut take acknowledged records with it. */
static void torn_or_damaged(const unsigned char *data, size_t len, size_t at, const char *torn_why,
                            const char *damaged_why, rl__records_scan *out) {
    for (size_t later = at + 1; later + RL__RECORD_FRAME_BYTES < len; later++) {
        if (frame_at(data, len, later)) {
            verdict(out, RL__RECORDS_DAMAGED, at, damaged_why);
            return;
        }
    }
    verdict(out, RL__RECORDS_TORN_TAIL, at, torn_why);
}

void rl__records_read(const unsigned char *data, size_t len, rl__record_fn each, void *context,
                      rl__records_scan *out) {
    memset(out, 0, sizeof *out);
    out->verdict = RL__RECORDS_WHOLE;
    if (len == 0) return;
    const size_t header = RL__RECORD_FILE_HEADER_BYTES;
    if (len < header) {
        if (memcmp(data, RL__RECORD_FILE_HEADER, len) == 0)
            verdict(out, RL__RECORDS_TORN_TAIL, 0, "an unfinished header");
        else
            verdict(out, RL__RECORDS_DAMAGED, 0, "not a record file (its header is wrong)");
        return;
    }
    if (memcmp(data, RL__RECORD_FILE_HEADER, header) != 0) {
        verdict(out, RL__RECORDS_DAMAGED, 0, "not a record file (its header is wrong)");
        return;
    }
    size_t at = header;
    out->whole_bytes = header;
    while (at < len) {
        size_t left = len - at;
        /* Zeros to the end: a file system's tail after a crash, never a record. */
        if (all_zero(data + at, left)) {
            verdict(out, RL__RECORDS_TORN_TAIL, at, "zeros after the last record");
            return;
        }
        if (left < RL__RECORD_FRAME_BYTES) {
            verdict(out, RL__RECORDS_TORN_TAIL, at, "an unfinished record");
            return;
        }
        uint32_t n = le32(data + at);
        bool sane = n >= 1 && n <= RL__RECORD_MAX_BYTES;
        if (sane && n > left - RL__RECORD_FRAME_BYTES) {
            torn_or_damaged(data, len, at, "an unfinished record",
                            "a record whose length runs past the end of the file, with whole records after it", out);
            return;
        }
        uint32_t crc = 0;
        if (sane) crc = rl__crc32c(rl__crc32c(0, data + at, 4), data + at + RL__RECORD_FRAME_BYTES, n);
        if (!sane || crc != le32(data + at + 4)) {
            size_t end = sane ? at + RL__RECORD_FRAME_BYTES + n : len;
            /* The last record, or one followed only by zeros: it was being
             * written when the crash came, and never acknowledged. */
            if (sane && (end == len || all_zero(data + end, len - end)))
                torn_or_damaged(data, len, at, "a last record whose checksum does not match",
                                "a record whose checksum does not match, with whole records after it", out);
            else
                verdict(out, RL__RECORDS_DAMAGED, at,
                        sane ? "a record whose checksum does not match, with more after it"
                             : "a record length out of range, with more after it");
            return;
        }
        if (each != NULL && !each(data + at + RL__RECORD_FRAME_BYTES, n, at, context)) {
            verdict(out, RL__RECORDS_DAMAGED, at, "a record this version cannot read");
            return;
        }
        at += RL__RECORD_FRAME_BYTES + n;
        out->whole_bytes = at;
        out->records++;
    }
}

/* ---- a file ---------------------------------------------------------------------- */

struct rl__record_file {
    char *path;
    int fd;
    uint64_t size; /* on disk, as written by this file */
    unsigned char *pending;
    size_t pending_len, pending_cap;
};

/* A new file: the header alone, made durable. */
static bool write_header(int fd, void *context) {
    (void)context;
    return rl__write_all(fd, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES) == 0;
}

static rl_status cut_torn_tail(const char *path, const rl__records_scan *scan, char *err, size_t err_size) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot open to cut its torn tail: %s", path, strerror(errno));
    int rc = ftruncate(fd, (off_t)scan->whole_bytes);
    if (rc == 0) rc = fsync(fd);
    int saved = errno;
    close(fd);
    if (rc != 0)
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot cut its torn tail at offset %zu: %s", path,
                    scan->whole_bytes, strerror(saved));
    fprintf(stderr, "ratelimiter: %s: cut a torn tail at offset %zu (%s): a write the crash interrupted, never acknowledged\n",
            path, scan->bad_offset, scan->why);
    return RL_OK;
}

static rl_status open_for_append(rl__record_file *file, char *err, size_t err_size) {
    file->fd = open(file->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (file->fd < 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot open to append: %s", file->path, strerror(errno));
    struct stat st;
    if (fstat(file->fd, &st) != 0)
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot stat: %s", file->path, strerror(errno));
    file->size = (uint64_t)st.st_size;
    return RL_OK;
}

rl_status rl__record_file_open(const char *path, rl__record_fn each, void *context, rl__record_file **out,
                               char *err, size_t err_size) {
    *out = NULL;
    char *data = NULL;
    size_t len = 0;
    bool missing = false;
    rl_status status = rl__read_whole_file(path, SIZE_MAX, &data, &len, &missing, err, err_size);
    if (status != RL_OK) return status;
    rl__records_scan scan;
    rl__records_read((const unsigned char *)data, len, each, context, &scan);
    free(data);
    if (scan.verdict == RL__RECORDS_DAMAGED)
        return fail(RL_IO_ERROR, err, err_size,
                    "%s: damaged at offset %zu (%s); the file is left as it is: restore it from a backup, or "
                    "move it away to start without what it held",
                    path, scan.bad_offset, scan.why);
    bool fresh = missing || scan.whole_bytes == 0;
    if (fresh) {
        bool replaced;
        status = rl__atomic_file_replace(path, write_header, NULL, &replaced, err, err_size);
        if (status != RL_OK) return status;
    } else if (scan.verdict == RL__RECORDS_TORN_TAIL) {
        status = cut_torn_tail(path, &scan, err, err_size);
        if (status != RL_OK) return status;
    }
    rl__record_file *file = calloc(1, sizeof *file);
    if (file == NULL || (file->path = strdup(path)) == NULL) {
        free(file);
        return fail(RL_NO_MEMORY, err, err_size, "%s: out of memory", path);
    }
    file->fd = -1;
    status = open_for_append(file, err, err_size);
    if (status != RL_OK) {
        rl__record_file_close(file);
        return status;
    }
    *out = file;
    return RL_OK;
}

rl_status rl__record_file_append(rl__record_file *file, const void *record, size_t len) {
    if (len < 1 || len > RL__RECORD_MAX_BYTES) return RL_INVALID_REQUEST;
    size_t need = file->pending_len + RL__RECORD_FRAME_BYTES + len;
    if (need > file->pending_cap) {
        size_t cap = file->pending_cap > 0 ? file->pending_cap : 4096;
        while (cap < need) cap *= 2;
        unsigned char *grown = realloc(file->pending, cap);
        if (grown == NULL) return RL_NO_MEMORY;
        file->pending = grown;
        file->pending_cap = cap;
    }
    file->pending_len += rl__record_frame(file->pending + file->pending_len, record, len);
    return RL_OK;
}

void rl__record_file_discard(rl__record_file *file) { file->pending_len = 0; }

int rl__record_file_sync_handle(const rl__record_file *file) { return fcntl(file->fd, F_DUPFD_CLOEXEC, 0); }

size_t rl__record_file_pending_bytes(const rl__record_file *file) { return file->pending_len; }

uint64_t rl__record_file_size(const rl__record_file *file) { return file->size; }

rl_status rl__record_file_flush(rl__record_file *file, bool sync, char *err, size_t err_size) {
    if (file->pending_len > 0) {
        if (rl__write_all(file->fd, file->pending, file->pending_len) != 0) {
            int saved = errno;
            /* A short write left part of a record: cut it, so that the retry
             * (which writes every pending record again) leaves no torn
             * record in the middle of the file. */
            int cut = ftruncate(file->fd, (off_t)file->size);
            (void)cut; /* failing that too, the next open cuts it as a torn tail */
            return fail(RL_IO_ERROR, err, err_size, "%s: cannot write: %s", file->path, strerror(saved));
        }
        file->size += file->pending_len;
        file->pending_len = 0;
    }
    if (sync && fdatasync(file->fd) != 0)
        return fail(RL_IO_ERROR, err, err_size, "%s: cannot fdatasync: %s", file->path, strerror(errno));
    return RL_OK;
}

/* ---- rewriting ------------------------------------------------------------------- */

#define SINK_CHUNK_BYTES (64u * 1024u) /* written out when full */

struct rl__record_sink {
    int fd;
    unsigned char *chunk; /* records gathered before a write */
    size_t len, cap;
    bool failed;
};

static bool sink_write(rl__record_sink *sink) {
    if (sink->len > 0 && rl__write_all(sink->fd, sink->chunk, sink->len) != 0) sink->failed = true;
    sink->len = 0;
    return !sink->failed;
}

bool rl__record_sink_add(rl__record_sink *sink, const void *record, size_t len) {
    if (sink->failed || len < 1 || len > RL__RECORD_MAX_BYTES) return false;
    if (sink->len + RL__RECORD_FRAME_BYTES + len > sink->cap && !sink_write(sink)) return false;
    if (RL__RECORD_FRAME_BYTES + len > sink->cap) {
        unsigned char *grown = realloc(sink->chunk, RL__RECORD_FRAME_BYTES + len);
        if (grown == NULL) {
            sink->failed = true;
            errno = ENOMEM;
            return false;
        }
        sink->chunk = grown;
        sink->cap = RL__RECORD_FRAME_BYTES + len;
    }
    sink->len += rl__record_frame(sink->chunk + sink->len, record, len);
    return true;
}

/* A sink writing to fd, starting a file (its header first) or appending to
 * one; false without memory. */
static bool sink_init(rl__record_sink *sink, int fd, bool start) {
    *sink = (rl__record_sink){fd, malloc(SINK_CHUNK_BYTES), 0, SINK_CHUNK_BYTES, false};
    if (sink->chunk == NULL) return false;
    if (start) {
        memcpy(sink->chunk, RL__RECORD_FILE_HEADER, RL__RECORD_FILE_HEADER_BYTES);
        sink->len = RL__RECORD_FILE_HEADER_BYTES;
    }
    return true;
}

rl__record_sink *rl__record_sink_open(const char *path, bool start) {
    rl__record_sink *sink = malloc(sizeof *sink);
    if (sink == NULL) return NULL;
    int fd = open(path, O_WRONLY | O_CLOEXEC | (start ? O_CREAT | O_TRUNC : O_APPEND), 0644);
    if (fd < 0 || !sink_init(sink, fd, start)) {
        if (fd >= 0) close(fd);
        free(sink);
        return NULL;
    }
    return sink;
}

bool rl__record_sink_close(rl__record_sink *sink) {
    if (sink == NULL) return false;
    bool ok = sink_write(sink) && fdatasync(sink->fd) == 0;
    close(sink->fd);
    free(sink->chunk);
    free(sink);
    return ok;
}

typedef struct rewrite {
    rl__record_file *file;
    rl__record_source_fn source;
    void *context;
} rewrite;

static bool write_rewrite(int fd, void *context) {
    rewrite *r = context;
    rl__record_sink sink;
    if (!sink_init(&sink, fd, true)) return false;
    bool ok = r->source(&sink, r->context) && sink_write(&sink) &&
              rl__write_all(fd, r->file->pending, r->file->pending_len) == 0;
    free(sink.chunk);
    return ok;
}

rl_status rl__record_file_rewrite(rl__record_file *file, rl__record_source_fn source, void *context, char *err,
                                  size_t err_size) {
    rewrite r = {file, source, context};
    bool replaced = false;
    rl_status status = rl__atomic_file_replace(file->path, write_rewrite, &r, &replaced, err, err_size);
    if (!replaced) return status;
    /* The new file holds the buffered records too. */
    file->pending_len = 0;
    close(file->fd);
    file->fd = -1;
    rl_status reopened = open_for_append(file, err, err_size);
    return reopened != RL_OK ? reopened : status;
}

rl_status rl__record_file_adopt(rl__record_file *file, const char *tmp_path, bool sync, int *replaced_fd, char *err,
                                size_t err_size) {
    *replaced_fd = -1;
    int fd = open(tmp_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return fail(RL_IO_ERROR, err, err_size, "%s: cannot open to append: %s", tmp_path, strerror(errno));
    bool written = file->pending_len == 0 || rl__write_all(fd, file->pending, file->pending_len) == 0;
    int saved = errno;
    if (written && sync && fdatasync(fd) != 0) {
        written = false;
        saved = errno;
    }
    close(fd);
    if (!written) return fail(RL_IO_ERROR, err, err_size, "%s: cannot write: %s", tmp_path, strerror(saved));
    bool replaced = false;
    rl_status status = sync ? rl__atomic_file_rename(tmp_path, file->path, &replaced, err, err_size)
                            : rl__atomic_file_rename_unsynced(tmp_path, file->path, &replaced, err, err_size);
    if (!replaced) return status;
    file->pending_len = 0; /* in the new file */
    *replaced_fd = file->fd;
    file->fd = -1;
    rl_status reopened = open_for_append(file, err, err_size);
    return reopened != RL_OK ? reopened : status;
}

void rl__record_file_close(rl__record_file *file) {
    if (file == NULL) return;
    if (file->fd >= 0) close(file->fd);
    free(file->pending);
    free(file->path);
    free(file);
}
