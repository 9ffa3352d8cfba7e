/* sqlite_registry.c — see sqlite_registry.h. */
#include "sqlite_registry.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sq_registry {
    sqlite3 *db;
    sqlite3_stmt *put, *delete, *list, *begin, *commit, *rollback;
};

static bool failed(sq_registry *registry, const char *what, char err[256]) {
    snprintf(err, 256, "%s: %s", what, sqlite3_errmsg(registry->db));
    return false;
}

static bool run(sq_registry *registry, sqlite3_stmt *stmt, const char *what, char err[256]) {
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? true : failed(registry, what, err);
}

sq_registry *sq_open(const char *path, char err[256]) {
    sq_registry *registry = calloc(1, sizeof *registry);
    if (registry == NULL) return NULL;
    static const char schema[] =
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
        "CREATE TABLE IF NOT EXISTS limits(key TEXT PRIMARY KEY, origin TEXT NOT NULL, kind INTEGER NOT NULL,"
        " capacity INTEGER NOT NULL, window_seconds INTEGER NOT NULL, timeout_seconds INTEGER NOT NULL,"
        " unit TEXT NOT NULL, description TEXT NOT NULL, overage INTEGER NOT NULL, period INTEGER NOT NULL,"
        " timezone TEXT NOT NULL) WITHOUT ROWID;";
    if (sqlite3_open(path, &registry->db) != SQLITE_OK || sqlite3_exec(registry->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "INSERT OR REPLACE INTO limits VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1,
                           &registry->put, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "DELETE FROM limits WHERE key = ?", -1, &registry->delete, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "SELECT * FROM limits ORDER BY key", -1, &registry->list, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "BEGIN", -1, &registry->begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "COMMIT", -1, &registry->commit, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(registry->db, "ROLLBACK", -1, &registry->rollback, NULL) != SQLITE_OK) {
        failed(registry, path, err);
        sq_close(registry);
        return NULL;
    }
    return registry;
}

void sq_close(sq_registry *registry) {
    if (registry == NULL) return;
    sqlite3_stmt *stmts[] = {registry->put, registry->delete, registry->list,
                             registry->begin, registry->commit, registry->rollback};
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) sqlite3_finalize(stmts[i]);
    sqlite3_close(registry->db);
    free(registry);
}

static bool bind_def(sqlite3_stmt *s, const rl_limit_def *def) {
    return sqlite3_bind_text(s, 1, def->key, -1, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_bind_text(s, 2, "", 0, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_bind_int(s, 3, (int)def->kind) == SQLITE_OK &&
           sqlite3_bind_int64(s, 4, (sqlite3_int64)def->capacity) == SQLITE_OK &&
           sqlite3_bind_int64(s, 5, def->window_seconds) == SQLITE_OK &&
           sqlite3_bind_int64(s, 6, def->timeout_seconds) == SQLITE_OK &&
           sqlite3_bind_text(s, 7, def->unit, -1, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_bind_text(s, 8, def->description, -1, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_bind_int(s, 9, (int)def->overage) == SQLITE_OK &&
           sqlite3_bind_int(s, 10, (int)def->period) == SQLITE_OK &&
           sqlite3_bind_text(s, 11, def->timezone, -1, SQLITE_STATIC) == SQLITE_OK;
}

bool sq_put_many(sq_registry *registry, const rl_limit_def *defs, size_t count, char err[256]) {
    if (!run(registry, registry->begin, "BEGIN", err)) return false;
    for (size_t i = 0; i < count; i++) {
        if (!bind_def(registry->put, &defs[i]) || !run(registry, registry->put, "INSERT", err)) {
            run(registry, registry->rollback, "ROLLBACK", err);
            return false;
        }
    }
    return run(registry, registry->commit, "COMMIT", err);
}

bool sq_delete(sq_registry *registry, const char *key, bool *found, char err[256]) {
    if (sqlite3_bind_text(registry->delete, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
        !run(registry, registry->delete, "DELETE", err))
        return false;
    *found = sqlite3_changes(registry->db) > 0;
    return true;
}

static void text_into(sqlite3_stmt *s, int column, char *out, size_t size) {
    const unsigned char *text = sqlite3_column_text(s, column);
    snprintf(out, size, "%s", text != NULL ? (const char *)text : "");
}

bool sq_list(sq_registry *registry, rl_limit_def **out, size_t *count, char err[256]) {
    size_t cap = 1024, n = 0;
    rl_limit_def *defs = malloc(cap * sizeof *defs);
    sqlite3_stmt *s = registry->list;
    int rc;
    while (defs != NULL && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            rl_limit_def *bigger = realloc(defs, (cap *= 2) * sizeof *defs);
            if (bigger == NULL) break;
            defs = bigger;
        }
        rl_limit_def *def = &defs[n++];
        memset(def, 0, sizeof *def);
        text_into(s, 0, def->key, sizeof def->key);
        def->kind = (rl_kind)sqlite3_column_int(s, 2);
        def->capacity = (uint64_t)sqlite3_column_int64(s, 3);
        def->window_seconds = (uint32_t)sqlite3_column_int64(s, 4);
        def->timeout_seconds = (uint32_t)sqlite3_column_int64(s, 5);
        text_into(s, 6, def->unit, sizeof def->unit);
        text_into(s, 7, def->description, sizeof def->description);
        def->overage = (rl_overage)sqlite3_column_int(s, 8);
        def->period = (rl_period)sqlite3_column_int(s, 9);
        text_into(s, 10, def->timezone, sizeof def->timezone);
        char why[200];
        if (!rl_limit_def_validate(def, why, sizeof why)) {
            snprintf(err, 256, "row %.64s: %.180s", def->key, why);
            sqlite3_reset(s);
            free(defs);
            return false;
        }
    }
    sqlite3_reset(s);
    if (defs == NULL) return failed(registry, "out of memory", err);
    *out = defs;
    *count = n;
    return true;
}
