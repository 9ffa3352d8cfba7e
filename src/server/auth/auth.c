/* auth.c — the two token sets behind a read-write lock, their reload, and
 * the decision on one request (auth.h). */
#include "server/auth/auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/config.h"

/* One tokens file and the set read from it last. */
typedef struct token_file {
    char path[RL_CONFIG_STRING_MAX]; /* "" when not set */
    rl_token_set *set;               /* NULL when not set */
} token_file;

struct rl_auth {
    /* Held for reading while digests are compared, for writing while the
     * sets are swapped: a reload never frees a set a loop is reading. */
    pthread_rwlock_t lock;
    token_file admin, data;
    bool metrics_require_token;
};

static bool set_path(token_file *file, const char *path, const char *setting, char *err, size_t err_size) {
    if (path == NULL || path[0] == '\0') return true;
    if (strlen(path) >= sizeof file->path) {
        snprintf(err, err_size, "%s is longer than %d bytes", setting, RL_CONFIG_STRING_MAX - 1);
        return false;
    }
    snprintf(file->path, sizeof file->path, "%s", path);
    return rl_token_set_load_file(path, &file->set, err, err_size);
}

bool rl_auth_create(const rl_auth_options *options, rl_auth **out, char *err, size_t err_size) {
    *out = NULL;
    rl_auth *auth = calloc(1, sizeof *auth);
    if (auth == NULL) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    auth->metrics_require_token = options->metrics_require_token;
    if (!set_path(&auth->admin, options->admin_tokens_file, "admin.tokens_file", err, err_size) ||
        !set_path(&auth->data, options->data_tokens_file, "data.tokens_file", err, err_size)) {
        rl_token_set_free(auth->admin.set);
        free(auth);
        return false;
    }
    if (auth->metrics_require_token && auth->admin.set == NULL && auth->data.set == NULL) {
        snprintf(err, err_size, "metrics.require_token needs admin.tokens_file or data.tokens_file: no token "
                                "could ever be accepted");
        free(auth);
        return false;
    }
    pthread_rwlock_init(&auth->lock, NULL);
    *out = auth;
    return true;
}

bool rl_auth_enabled(const rl_auth *auth) {
    return auth != NULL && (auth->admin.set != NULL || auth->data.set != NULL);
}

/* The paths are set once at create: reading them needs no lock. */
bool rl_auth_guards_admin(const rl_auth *auth) { return auth != NULL && auth->admin.path[0] != '\0'; }
bool rl_auth_guards_data(const rl_auth *auth) { return auth != NULL && auth->data.path[0] != '\0'; }

/* Loads file's path again into *fresh; says on log what came of it. */
static bool reread(const token_file *file, const char *setting, rl_token_set **fresh, FILE *log) {
    *fresh = NULL;
    if (file->path[0] == '\0') return true;
    char err[RL_CONFIG_ERR_SIZE];
    if (!rl_token_set_load_file(file->path, fresh, err, sizeof err)) {
        fprintf(log, "ratelimiterd: %s not reloaded, its previous tokens stay: %s\n", setting, err);
        return false;
    }
    fprintf(log, "ratelimiterd: %s reloaded: %zu tokens\n", setting, rl_token_set_count(*fresh));
    return true;
}

bool rl_auth_reload(rl_auth *auth, FILE *log) {
    rl_token_set *admin = NULL, *data = NULL;
    bool admin_ok = reread(&auth->admin, "admin.tokens_file", &admin, log);
    bool data_ok = reread(&auth->data, "data.tokens_file", &data, log);
    pthread_rwlock_wrlock(&auth->lock);
    if (admin != NULL) {
        rl_token_set *old = auth->admin.set;
        auth->admin.set = admin;
        admin = old;
    }
    if (data != NULL) {
        rl_token_set *old = auth->data.set;
        auth->data.set = data;
        data = old;
    }
    pthread_rwlock_unlock(&auth->lock);
    rl_token_set_free(admin); /* the old sets, now that no loop reads them */
    rl_token_set_free(data);
    return admin_ok && data_ok;
}

static bool has_prefix(const char *path, size_t path_len, const char *prefix) {
    size_t len = strlen(prefix);
    return path_len >= len && memcmp(path, prefix, len) == 0;
}

rl_auth_scope rl_auth_scope_of(const char *path, size_t path_len) {
    /* "/v1/admin" itself and "/v1/admin/..." (not "/v1/administrator"). */
    if (has_prefix(path, path_len, "/v1/admin") && (path_len == 9 || path[9] == '/')) return RL_AUTH_SCOPE_ADMIN;
    if (has_prefix(path, path_len, "/v1/reserve") || has_prefix(path, path_len, "/v1/complete"))
        return RL_AUTH_SCOPE_DATA;
    if (has_prefix(path, path_len, "/metrics")) return RL_AUTH_SCOPE_METRICS;
    return RL_AUTH_SCOPE_OPEN;
}

bool rl_auth_bearer_token(const char *value, size_t len, const char **token, size_t *token_len) {
    static const char scheme[] = "Bearer";
    size_t scheme_len = sizeof scheme - 1;
    if (len <= scheme_len || strncasecmp(value, scheme, scheme_len) != 0 || value[scheme_len] != ' ') return false;
    size_t first = scheme_len;
    while (first < len && value[first] == ' ') first++;
    size_t last = first;
    while (last < len && value[last] != ' ') last++;
    for (size_t i = last; i < len; i++)
        if (value[i] != ' ') return false; /* two words: not one token */
    if (last == first) return false;
    *token = value + first;
    *token_len = last - first;
    return true;
}

void rl_auth_check(const rl_auth *auth, const char *path, size_t path_len, const char *authorization,
                   size_t authorization_len, rl_auth_decision *out) {
    out->verdict = RL_AUTH_PASS;
    out->detail = NULL;
    if (auth == NULL) return;
    rl_auth_scope scope = rl_auth_scope_of(path, path_len);
    /* Which sets take this path; a set not configured takes nothing, and a
     * path none is configured for is open. */
    bool admin = false, data = false;
    const char *missing = NULL, *wrong = NULL;
    switch (scope) {
    case RL_AUTH_SCOPE_OPEN: return;
    case RL_AUTH_SCOPE_ADMIN:
        if (auth->admin.path[0] == '\0') return;
        admin = true;
        missing = "the admin API needs an admin token (admin.tokens_file): send Authorization: Bearer <token>";
        wrong = "the bearer token is not one of admin.tokens_file's";
        break;
    case RL_AUTH_SCOPE_DATA:
        if (auth->data.path[0] == '\0') return;
        admin = data = true;
        missing = "reserve and complete need a data token (data.tokens_file): send Authorization: Bearer <token>";
        wrong = "the bearer token is not one of data.tokens_file's or admin.tokens_file's";
        break;
    case RL_AUTH_SCOPE_METRICS:
        if (!auth->metrics_require_token) return;
        admin = data = true;
        missing = "/metrics needs a token (metrics.require_token): send Authorization: Bearer <token>";
        wrong = "the bearer token is not one of admin.tokens_file's or data.tokens_file's";
        break;
    }
    const char *token = NULL;
    size_t token_len = 0;
    if (authorization == NULL || !rl_auth_bearer_token(authorization, authorization_len, &token, &token_len)) {
        out->verdict = RL_AUTH_UNAUTHORIZED;
        out->detail = missing;
        return;
    }
    uint8_t digest[RL_TOKEN_DIGEST_BYTES];
    rl_token_digest(token, token_len, digest);
    pthread_rwlock_t *lock = (pthread_rwlock_t *)&auth->lock; /* the sets are read; the lock is not const */
    pthread_rwlock_rdlock(lock);
    /* Both sets are asked whatever the first says: no shortcut to time. */
    bool in_admin = admin && rl_token_set_has_digest(auth->admin.set, digest);
    bool in_data = data && rl_token_set_has_digest(auth->data.set, digest);
    pthread_rwlock_unlock(lock);
    if (in_admin || in_data) return;
    out->verdict = RL_AUTH_FORBIDDEN;
    out->detail = wrong;
}

void rl_auth_destroy(rl_auth *auth) {
    if (auth == NULL) return;
    rl_token_set_free(auth->admin.set);
    rl_token_set_free(auth->data.set);
    pthread_rwlock_destroy(&auth->lock);
    free(auth);
}
