/* decode_fields.c — lease_id, job_id and the key/amount list of one request
 * (decode_fields.h). */
#include "wire/decode_fields.h"

#include <string.h>

#include "core/lease_rules.h"

/* Member names are compared by length first: most differ there. */
#define NAME_IS(name, len, literal) \
    ((len) == sizeof(literal) - 1 && memcmp((name), (literal), sizeof(literal) - 1) == 0)

static bool name_is(const char *name, size_t len, const char *expected, size_t expected_len) {
    return len == expected_len && memcmp(name, expected, len) == 0;
}

static bool decode_lease_id(rl__json_scan *s, const char **out, uint32_t *rank,
                            const rl__json_path *path) {
    char *text;
    size_t len;
    if (!rl__read_string_or_skip(s, &text, &len)) return false;
    if (!rl__lease_id_ok(text, len)) {
        rl__json_note(rank, RL__RANK_LEASE_ID, path, "lease_id",
                      "must be a ULID: 26 characters of Crockford base32, the first 0..7");
        return true;
    }
    *out = text; /* as written: every case of a ULID is one lease (lease_rules.h) */
    return true;
}

static bool decode_job_id(rl__json_scan *s, const char **out, uint32_t *rank,
                          const rl__json_path *path) {
    *out = NULL;
    /* Skipping a value that starts with 'n' succeeds only for null. */
    if (rl__scan_peek(s) == 'n') return rl__scan_skip(s);
    char *text;
    size_t len;
    if (!rl__read_string_or_skip(s, &text, &len)) return false;
    if (!rl__job_id_ok(text, len)) {
        rl__json_note(rank, RL__RANK_JOB_ID, path, "job_id",
                      "must be null or a string of at most %d bytes without control characters",
                      RL_JOB_ID_MAX_LEN);
        return true;
    }
    *out = text;
    return true;
}

/* The request's flag ("dry_run"): true or false. */
static bool decode_flag(rl__json_scan *s, const char *name, bool *out, uint32_t *rank, const rl__json_path *path) {
    bool valid;
    if (!rl__read_bool_or_skip(s, out, &valid)) return false;
    if (!valid) rl__json_note(rank, RL__RANK_FLAG, path, name, "must be true or false");
    return true;
}

/* One {key, <amount>} element (the scanner at it). *valid says whether both
 * are there and allowed; problems are noted under path. */
static bool decode_element(rl__json_scan *s, const rl__list_spec *spec, const char **key,
                           uint64_t *amount, bool *flag, bool *valid, uint32_t *rank,
                           const rl__json_path *path) {
    *valid = false;
    *flag = false;
    if (rl__scan_peek(s) != '{') {
        if (!rl__scan_skip(s)) return false;
        rl__json_note(rank, RL__RANK_ELEMENT_SHAPE, path, NULL, "must be an object");
        return true;
    }
    if (!rl__scan_object_open(s)) return false;
    bool seen_key = false, seen_amount = false, seen_flag = false, key_ok = false, amount_ok = false,
         flag_ok = true, twice = false;
    char *name;
    size_t len;
    int more;
    for (size_t i = 0; (more = rl__scan_member(s, i, &name, &len)) > 0; i++) {
        if (NAME_IS(name, len, "key")) {
            if (seen_key) {
                twice = true;
                rl__json_note(rank, RL__RANK_ELEMENT_SHAPE, path, "key", "appears twice");
                if (!rl__scan_skip(s)) return false;
                continue;
            }
            seen_key = true;
            char *text;
            size_t key_len;
            if (!rl__read_string_or_skip(s, &text, &key_len)) return false;
            key_ok = rl__lease_key_ok(text, key_len);
            *key = text;
            if (!key_ok)
                rl__json_note(rank, RL__RANK_ELEMENT_KEY, path, "key",
                              "must be a string of 1..%d printable ASCII characters without "
                              "spaces",
                              RL_KEY_MAX_LEN);
        } else if (name_is(name, len, spec->amount_name, spec->amount_name_len)) {
            if (seen_amount) {
                twice = true;
                rl__json_note(rank, RL__RANK_ELEMENT_SHAPE, path, spec->amount_name,
                              "appears twice");
                if (!rl__scan_skip(s)) return false;
                continue;
            }
            seen_amount = true;
            /* Read within the rule's range: exactly, however written (wire.h). */
            if (!rl__read_integer(s, spec->min_amount, RL_AMOUNT_MAX, amount, &amount_ok)) return false;
            if (!amount_ok)
                rl__json_note(rank, RL__RANK_ELEMENT_AMOUNT, path, spec->amount_name,
                              "must be an integer %llu..%llu",
                              (unsigned long long)spec->min_amount,
                              (unsigned long long)RL_AMOUNT_MAX);
        } else if (spec->element_flag_name != NULL &&
                   name_is(name, len, spec->element_flag_name, spec->element_flag_name_len)) {
            if (seen_flag) {
                twice = true;
                rl__json_note(rank, RL__RANK_ELEMENT_SHAPE, path, spec->element_flag_name, "appears twice");
                if (!rl__scan_skip(s)) return false;
                continue;
            }
            seen_flag = true;
            if (!rl__read_bool_or_skip(s, flag, &flag_ok)) return false;
            if (!flag_ok)
                rl__json_note(rank, RL__RANK_ELEMENT_FLAG, path, spec->element_flag_name, "must be true or false");
        } else if (!rl__scan_skip(s)) {
            return false;
        }
    }
    if (more < 0) return false;
    if (!seen_key) rl__json_note(rank, RL__RANK_ELEMENT_KEY, path, "key", "is required");
    if (!seen_amount)
        rl__json_note(rank, RL__RANK_ELEMENT_AMOUNT, path, spec->amount_name, "is required");
    *valid = key_ok && amount_ok && flag_ok && !twice;
    return true;
}

static void note_list_shape(const rl__list_spec *spec, uint32_t *rank, const rl__json_path *path) {
    rl__json_note(rank, RL__RANK_LIST, path, spec->name, "must be %san array of %zu..%d %s",
                  spec->optional ? "null or " : "", spec->min_count, RL_MAX_REQUIREMENTS,
                  spec->name);
}

/* The list (the scanner at its value). Decodes elements up to the first one
 * with a problem; the rest are only counted (a list that is too long is the
 * more important problem) and checked for syntax. */
static bool decode_list(rl__json_scan *s, const rl__list_spec *spec, rl__lease_fields *out,
                        uint32_t *rank, const rl__json_path *path) {
    out->count = 0;
    char c = rl__scan_peek(s);
    if (c == 'n' && spec->optional) return rl__scan_skip(s); /* null, or not JSON */
    if (c != '[') {
        if (!rl__scan_skip(s)) return false;
        note_list_shape(spec, rank, path);
        return true;
    }
    if (!rl__scan_array_open(s)) return false;
    rl__json_path element_path = *path;
    element_path.inner = spec->name;
    bool failed = false;
    size_t i = 0;
    int more;
    for (; (more = rl__scan_element(s, i)) > 0; i++) {
        if (failed || i >= RL_MAX_REQUIREMENTS) {
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        element_path.inner_index = i;
        bool valid;
        if (!decode_element(s, spec, &out->key[i], &out->amount[i], &out->element_flag[i], &valid, rank,
                            &element_path))
            return false;
        size_t earlier = valid ? rl__lease_key_repeats(out->key, i) : i;
        if (earlier != i) {
            rl__json_note(rank, RL__RANK_ELEMENT_REPEAT, &element_path, "key", "repeats %s[%zu].key: %s",
                          spec->name, earlier, spec->repeat_note);
            valid = false;
        }
        failed = !valid;
    }
    if (more < 0) return false;
    if (!rl__lease_count_ok(i, spec->min_count)) note_list_shape(spec, rank, path);
    out->count = failed ? 0 : i;
    return true;
}

bool rl__decode_lease_object(rl__json_scan *s, const rl__list_spec *spec, rl__lease_fields *out,
                             uint32_t *rank, const rl__json_path *path) {
    enum { LEASE_ID = 1, JOB_ID = 2, LIST = 4, FLAG = 8 };
    unsigned seen = 0;
    out->lease_id = NULL;
    out->job_id = NULL;
    out->count = 0;
    out->flag = false;
    if (!rl__scan_object_open(s)) return false;
    char *name;
    size_t len;
    int more;
    for (size_t i = 0; (more = rl__scan_member(s, i, &name, &len)) > 0; i++) {
        unsigned field = NAME_IS(name, len, "lease_id")   ? LEASE_ID
                         : NAME_IS(name, len, "job_id")   ? JOB_ID
                         : name_is(name, len, spec->name, spec->name_len) ? LIST
                         : spec->flag_name != NULL && name_is(name, len, spec->flag_name, spec->flag_name_len)
                             ? FLAG
                             : 0;
        if (field == 0) {
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        if (seen & field) {
            /* The sender meant one of the two and we cannot know which. */
            rl__json_note(rank, RL__RANK_TWICE, path,
                          field == LEASE_ID ? "lease_id"
                          : field == JOB_ID ? "job_id"
                          : field == FLAG   ? spec->flag_name
                                            : spec->name,
                          "appears twice");
            if (!rl__scan_skip(s)) return false;
            continue;
        }
        seen |= field;
        bool ok = field == LEASE_ID ? decode_lease_id(s, &out->lease_id, rank, path)
                  : field == JOB_ID ? decode_job_id(s, &out->job_id, rank, path)
                  : field == FLAG   ? decode_flag(s, spec->flag_name, &out->flag, rank, path)
                                    : decode_list(s, spec, out, rank, path);
        if (!ok) return false;
    }
    if (more < 0) return false;
    if (!(seen & LEASE_ID)) rl__json_note(rank, RL__RANK_LEASE_ID, path, "lease_id", "is required");
    if (!(seen & LIST) && !spec->optional)
        rl__json_note(rank, RL__RANK_LIST, path, spec->name, "is required");
    return true;
}
