/* server/service.h — the registry and the backend, glued for the handlers.
 *
 * Two modes, chosen by the backend:
 *
 * - Local (memory: the backend has no list_definitions). The registry is the
 *   authority on which limits exist; the backend holds their live state. At
 *   open every registry definition is applied to the backend, and an admin
 *   put persists the definition first, then applies it.
 *
 * - Shared (redis: many daemons, one store). The backend is the authority on
 *   which limits exist, so that a put through one daemon is seen by all. At
 *   open, definitions of the local registry are applied only for keys the
 *   backend does not hold yet (the backend wins), then the registry file is
 *   refreshed from the backend: it stays as the registry's limits.json, a cache
 *   and a backup. Reads list the backend and write changed definitions
 *   through to the registry; a put applies to the backend first, then to the
 *   registry (best-effort).
 *
 * Admin calls are serialised by one admin mutex so that two puts cannot
 * interleave their halves. The hot path (reserve, complete) goes straight to
 * the backend, which has its own lock: no lock here.
 */
#ifndef RL_SERVER_SERVICE_H
#define RL_SERVER_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "ratelimiter/backend.h"
#include "ratelimiter/memory.h"
#include "ratelimiter/presets.h"
#include "ratelimiter/redis.h"
#include "ratelimiter/registry.h"
#include "ratelimiter/submitter.h"
#include "ratelimiter/types.h"

typedef struct rl_service rl_service;

typedef struct rl_service_options {
    const char *backend_name;  /* "memory" or "redis" */
    const char *registry_path; /* limits.json; a missing file is an empty registry */
    size_t max_limits;         /* 0: RL_REGISTRY_DEFAULT_MAX_LIMITS */
    rl_memory_options memory;  /* for backend "memory"; its paths borrowed until rl_service_open returns */
    rl_redis_options redis;    /* for backend "redis": rl_redis_options_default, then the config */
    /* For backend "redis": leases from all HTTP threads share script calls
     * through a submitter (ratelimiter/submitter.h) unless max_leases is 1. */
    rl_submitter_options submitter;
    /* For backend "redis": decide leases locally from allotments
     * (ratelimiter/redis.h) when allotments is set, tuned by allotment. */
    bool allotments;
    rl_allotment_options allotment;
    /* Tests: a backend built by the caller, used instead of creating one by
     * name (backend_name is then ignored). The service owns it from the call
     * of rl_service_open on, even when that fails. NULL in production. */
    rl_backend *backend;
} rl_service_options;

/* A definition with its live usage (the admin API's LimitInfo). */
typedef struct rl_service_limit {
    rl_limit_def def;
    rl_limit_usage usage;
    /* Where def comes from when not from a PUT of its key: the template it
     * was made from, the provider preset that defined it ("" otherwise; see
     * "provider presets" below for how the preset is known). */
    char template_pattern[RL_KEY_MAX_LEN + 1];
    char preset[RL_KEY_MAX_LEN + 1];
} rl_service_limit;

/* Opens the registry, creates the backend by name and brings the two in
 * step (see the modes above). *out is owned by the caller
 * (rl_service_close). On failure nothing is left open, *out is NULL and err
 * (err_size bytes) says why: an unknown backend, an invalid, corrupt or
 * unreadable registry file, or a store that cannot be reached (the message
 * names its address). Returns RL_OK, RL_INVALID_REQUEST, RL_IO_ERROR,
 * RL_NO_MEMORY or RL_BACKEND_ERROR. Not thread-safe (start-up). */
rl_status rl_service_open(const rl_service_options *options, rl_service **out, char *err,
                          size_t err_size);

/* Destroys the backend, then closes the registry. No other call may be in
 * flight. NULL is allowed. */
void rl_service_close(rl_service *service);

/* The backend, for the hot path. Borrowed: valid until rl_service_close.
 * Thread-safe (the backend is). */
rl_backend *rl_service_backend(rl_service *service);

/* The backend's name ("memory", "redis"). Static string. */
const char *rl_service_backend_name(const rl_service *service);

/* Number of defined limits, from the authority (in shared mode the backend;
 * if it cannot be read, the registry's count). Thread-safe. */
size_t rl_service_limit_count(rl_service *service);

/* For /healthz: RL_OK with the number of limits (from the authority) in
 * *limits while the backend can serve, and a warning in detail if it is
 * degraded ("" if not); RL_BACKEND_ERROR with a sentence in detail
 * (detail_size bytes) when its store cannot be reached, read or written.
 * Thread-safe. */
rl_status rl_service_health(rl_service *service, size_t *limits, char *detail, size_t detail_size);

/* Creates or updates a limit; the state after the call goes to *out_status.
 *
 * Local mode: validates def, persists it (the registry appends it to its
 * log, durably), then applies it to the backend. If validation or persisting
 * fails nothing changes. Returns RL_OK; RL_INVALID_REQUEST (invalid, or the
 * registry is full) with a sentence in err; RL_IO_ERROR or RL_NO_MEMORY
 * (persisting failed); RL_BACKEND_ERROR if the backend refused a definition
 * already persisted (then the previous definition, if any, is put back).
 *
 * Shared mode: validates def, applies it to the backend (the authority),
 * then writes it to the registry. RL_BACKEND_ERROR if the backend failed
 * (nothing changed); once the backend holds it the put has happened for
 * every daemon, so a registry write that fails only logs a warning and the
 * call returns RL_OK.
 *
 * Both modes: RL_LIMIT_IN_USE (409) when the backend refuses a change of
 * kind while the limit holds reservations; nothing changes, err says what
 * it holds.
 *
 * Thread-safe: puts are serialised by the admin mutex. */
rl_status rl_service_put_limit(rl_service *service, const rl_limit_def *def,
                               rl_limit_status *out_status, char *err, size_t err_size);

/* Deletes the limit of key with everything it holds: its open reservations
 * and holds are dropped, nothing charged (backend.h, delete_definition).
 *
 * Local mode: the registry first (its log appended to, durably), then the
 * backend. If the registry cannot be written nothing changes; if the
 * backend cannot take the delete the registry gets the definition back.
 * A key the registry does not hold is deleted from the backend all the
 * same (a delete a crash cut between the two), and answered unknown.
 *
 * Shared mode: the backend (the authority) first, then the registry, whose
 * failure only logs a warning as for a put.
 *
 * Returns RL_OK; RL_UNKNOWN_LIMIT_KEY (no such limit: nothing changes);
 * RL_INVALID_REQUEST (not a valid key) with a sentence in err;
 * RL_BACKEND_ERROR (the store cannot be reached: nothing changed here, and
 * in the store the delete may or may not have been applied), RL_IO_ERROR or
 * RL_NO_MEMORY (the registry or the backend's journal could not be written).
 * Thread-safe: serialised with puts by the admin mutex. */
rl_status rl_service_delete_limit(rl_service *service, const char *key, char *err, size_t err_size);

/* What one change of a group does. */
typedef enum rl_service_op {
    RL_SERVICE_PUT = 0,          /* puts def (rl_service_put_limit) */
    RL_SERVICE_DELETE,           /* deletes the limit of def.key (rl_service_delete_limit) */
    RL_SERVICE_PUT_TEMPLATE,     /* puts the template def, def.key its pattern (rl_service_put_template) */
    RL_SERVICE_DELETE_TEMPLATE,  /* deletes the template of pattern def.key (rl_service_delete_template) */
} rl_service_op;

/* Bytes of a change's err: the longest sentence about a change, which
 * quotes its key whole (a kind change refused while the limit holds
 * something: rl__service_in_use_detail), in at most 511 bytes of its own
 * words; it holds the registry's sentences too. */
#define RL_SERVICE_ERR_SIZE (RL_KEY_MAX_LEN + 512)
_Static_assert(RL_SERVICE_ERR_SIZE >= RL_REGISTRY_ERR_SIZE, "a change's err holds the registry's");

/* The answer to one change of a group: a put, or a delete. */
typedef struct rl_service_put {
    rl_limit_def def;             /* in: the definition (a delete: only its key) */
    rl_service_op op;             /* in: RL_SERVICE_PUT (0) or RL_SERVICE_DELETE */
    rl_status status;             /* out: as rl_service_put_limit (rl_service_delete_limit) returns */
    rl_limit_status limit_status; /* out: on RL_OK of a put */
    char err[RL_SERVICE_ERR_SIZE]; /* out: why, when status is not RL_OK */
    /* in, a put: who makes it. "" (zeroed): the operator, whose put always
     * applies and makes the key theirs. "preset:<name>": a preset's apply
     * (rl_service_preset_puts), which yields to the operator's definition
     * (ratelimiter/presets.h); what it did is in outcome on RL_OK (kept and
     * unchanged puts write nothing). A refused one's status says why. */
    char origin[RL_REGISTRY_ORIGIN_MAX_LEN + 1];
    rl_preset_outcome outcome;
} rl_service_put;

/* Does count changes, in order, as count rl_service_put_limit and
 * rl_service_delete_limit calls would, each with its own answer, but with
 * one registry write for each run of puts of one origin (two when the
 * backend refuses one that was written first): the admin writer's group.
 * Thread-safe. */
void rl_service_put_limits(rl_service *service, rl_service_put *puts, size_t count);

/* Puts def as the template of its pattern (def->key), replacing the one
 * there (backend.h, put_template: keys no limit defines that it matches
 * are limits made from it on first use, forgotten once idle). Persisted
 * like limits: local mode, the registry first, then the backend (refused:
 * the registry gets the template before back); shared mode, the backend
 * first, then the registry's copy. RL_OK; RL_INVALID_REQUEST (not a
 * pattern, an invalid definition, too many templates) with a sentence in
 * err; RL_LIMIT_IN_USE (a change of kind while a limit made from it holds
 * reservations); RL_BACKEND_ERROR, RL_IO_ERROR, RL_NO_MEMORY. Thread-safe:
 * serialised with every admin change. */
rl_status rl_service_put_template(rl_service *service, const rl_limit_def *def, char *err, size_t err_size);

/* Deletes the template of pattern and the limits made from it (what they
 * hold is dropped). RL_OK; RL_UNKNOWN_LIMIT_KEY (no such template);
 * RL_INVALID_REQUEST (not a valid key) and the failures of a put. */
rl_status rl_service_delete_template(rl_service *service, const char *pattern, char *err, size_t err_size);

/* Every template sorted by pattern (def.key), in one malloc'd array the
 * caller frees; from the authority (the registry, or the shared store).
 * RL_OK, RL_NO_MEMORY, RL_BACKEND_ERROR. Thread-safe. */
rl_status rl_service_list_templates(rl_service *service, rl_limit_def **out, size_t *count);

/* ---- provider presets (ratelimiter/presets.h) ------------------------------
 *
 * A preset is applied as a run of puts of origin "preset:<name>", one
 * registry write for all of them (none when nothing changes), applied to
 * the backend as puts are. Who made a definition:
 *   local mode: its origin in the registry, kept with it (an operator's put
 *   of the key makes it "", a delete removes it);
 *   shared mode: the store keeps no origins, so a definition is a preset's
 *   when it is exactly what some preset makes for its key (the description
 *   names the preset and its date), else the operator's (core/preset_rule.h).
 */

/* The puts that apply presets[0..count) in order into puts (room for count
 * * RL_PRESET_MAX_LIMITS), zeroed but for def, op and origin: every limit
 * of each, a key several of them make once, with the last one's definition
 * (so that a list applied at every start changes nothing the second time).
 * Returns how many. Pure. */
size_t rl_service_preset_puts(const rl_preset *const *presets, size_t count, rl_service_put *puts);

/* Applies the presets named names[0..count) in order as one run of puts
 * (rl_service_preset_puts, rl_service_put_limits): the daemon's presets at
 * start, so that a list applied again changes nothing. Returns RL_OK with a
 * sentence for the log in report (report_size bytes): how many limits were
 * defined, updated, unchanged and kept, and each refused one with why.
 * Else RL_INVALID_REQUEST (a name no preset has: report lists them),
 * RL_NO_MEMORY, or the failure of the store or the registry file that
 * stopped some key (RL_BACKEND_ERROR, RL_IO_ERROR), report naming it; the
 * keys before it may be applied. Thread-safe. */
rl_status rl_service_apply_presets(rl_service *service, const char *const *names, size_t count, char *report,
                                   size_t report_size);

/* The definition of key and its live usage: the key's own definition, or
 * the one the template that matches it makes (out->template_pattern says
 * which; reading it makes the limit, forgotten again once idle). Returns RL_OK,
 * RL_UNKNOWN_LIMIT_KEY (not defined), or RL_BACKEND_ERROR / RL_NO_MEMORY
 * (the authority could not be read). Thread-safe. */
rl_status rl_service_get_limit(rl_service *service, const char *key, rl_service_limit *out);

/* Every limit sorted by key, with live usage, in one malloc'd array the
 * caller frees with free(); *count may be 0 (then *out is NULL). Returns
 * RL_OK, RL_NO_MEMORY or RL_BACKEND_ERROR. Thread-safe. */
rl_status rl_service_list_limits(rl_service *service, rl_service_limit **out, size_t *count);

/* For monitoring (GET /metrics): the first max limits in key order with
 * their live usage into one malloc'd array the caller frees (*count of
 * them, 0 and NULL for none), and how many limits there are in *total. The
 * usage of only those max is read (in shared mode, one Redis call each);
 * the definitions come from the authority as for rl_service_list_limits,
 * but the registry file is not refreshed and the admin mutex is not held:
 * a reading that may straddle an admin put. Template and preset sources
 * are left "". RL_OK, RL_NO_MEMORY or RL_BACKEND_ERROR. Thread-safe; may
 * wait for Redis: not for an event loop. */
rl_status rl_service_list_usage(rl_service *service, size_t max, rl_service_limit **out, size_t *count,
                                size_t *total);

#endif
