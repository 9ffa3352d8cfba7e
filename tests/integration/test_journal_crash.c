/* test_journal_crash.c — acknowledged usage survives kill -9 of ratelimiterd
 * (memory backend, journal on its default path; journal_fsync always,
 * everysec and off, which all write before answering).
 *
 * Rounds of: start the daemon on the same directory, run CLIENTS threads
 * that each reserve a lease on a rolling limit, a budget and a concurrency
 * limit, then complete it with smaller actuals, SIGKILL the daemon at a
 * random moment, restart it and read every limit's usage. Each client
 * knows what it saw acknowledged and the one call it had in flight, so:
 *   - before any retry, usage lies between what the acknowledged answers
 *     imply and that plus what the in-flight call could add (never below:
 *     acknowledged usage is never lost);
 *   - after retrying the in-flight call with the same lease id (reserve
 *     and complete are idempotent), usage is exactly what every client saw,
 *     and the audit log has exactly one entry per completed lease and key.
 *
 * RL_TEST_SEED=<n> repeats a run's random choices (the kill timing still
 * varies with the machine).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "support/daemon.h"
#include "support/ulid_gen.h"

enum { CLIENTS = 3, ROUNDS = 8 };

#define TPM "crash:tpm"
#define SPEND "crash:spend"
#define CONC "crash:conc"
#define TPM_RESERVE 100u
#define TPM_ACTUAL 37u
#define SPEND_RESERVE 5000u
#define SPEND_ACTUAL 1234u

static const char *REGISTRY =
    "[{\"key\":\"" TPM "\",\"kind\":\"rolling\",\"capacity\":1000000000000,\"window_seconds\":86400},"
    "{\"key\":\"" SPEND "\",\"kind\":\"budget\",\"capacity\":1000000000000,\"period\":\"month\","
    "\"timezone\":\"UTC\",\"timeout_seconds\":86400,\"unit\":\"usd_micros\"},"
    "{\"key\":\"" CONC "\",\"kind\":\"concurrency\",\"capacity\":1000000000,\"timeout_seconds\":86400}]";

static unsigned seed;

/* One lease's life as its client saw it. */
typedef enum lease_state { NOT_SENT, RESERVE_SENT, RESERVED, COMPLETE_SENT, COMPLETED } lease_state;

typedef struct client {
    uint16_t port;
    atomic_bool stop;
    char lease_id[27];
    lease_state state; /* of the current lease */
    uint64_t reserved, completed; /* acknowledged leases in each state, over all rounds */
} client;

static void reserve_body(const char *lease_id, char *out, size_t size) {
    snprintf(out, size,
             "{\"lease_id\":\"%s\",\"job_id\":\"crash-job\",\"requirements\":[{\"key\":\"" TPM "\",\"amount\":%u},"
             "{\"key\":\"" SPEND "\",\"amount\":%u},{\"key\":\"" CONC "\",\"amount\":1}]}",
             lease_id, TPM_RESERVE, SPEND_RESERVE);
}

static void complete_body(const char *lease_id, char *out, size_t size) {
    snprintf(out, size,
             "{\"lease_id\":\"%s\",\"actuals\":[{\"key\":\"" TPM "\",\"actual_amount\":%u},"
             "{\"key\":\"" SPEND "\",\"actual_amount\":%u}]}",
             lease_id, TPM_ACTUAL, SPEND_ACTUAL);
}

/* The call a lease needs next; true once acknowledged. */
static bool step(rl_test_client *http, client *c) {
    char body[512];
    rl_test_response response;
    bool acked = false;
    if (c->state == NOT_SENT || c->state == RESERVE_SENT) {
        if (c->state == NOT_SENT) rl_test_ulid_new(c->lease_id);
        c->state = RESERVE_SENT;
        reserve_body(c->lease_id, body, sizeof body);
        if (rl_test_client_request(http, "POST", "/v1/reserve", body, &response) == 200) {
            assert_non_null(strstr(response.body, "\"allowed\":true"));
            c->state = RESERVED;
            c->reserved++;
            acked = true;
        }
    } else {
        c->state = COMPLETE_SENT;
        complete_body(c->lease_id, body, sizeof body);
        if (rl_test_client_request(http, "POST", "/v1/complete", body, &response) == 200) {
            c->state = COMPLETED;
            c->reserved--;
            c->completed++;
            c->state = NOT_SENT;
            acked = true;
        }
    }
    rl_test_response_free(&response);
    return acked;
}

static void *client_main(void *arg) {
    client *c = arg;
    rl_test_client http;
    if (!rl_test_client_init(&http, c->port)) return NULL;
    while (!atomic_load(&c->stop)) {
        if (!step(&http, c)) break; /* the daemon is gone: the call stays in flight */
    }
    rl_test_client_cleanup(&http);
    return NULL;
}

static cJSON *usage_of(rl_test_daemon *daemon, const char *key) {
    char path[128];
    snprintf(path, sizeof path, "/v1/admin/limits/%s", key);
    rl_test_response response;
    assert_int_equal(rl_test_daemon_http(daemon, "GET", path, NULL, &response), 200);
    cJSON *doc = cJSON_Parse(response.body);
    rl_test_response_free(&response);
    assert_non_null(doc);
    return doc;
}

static uint64_t field(const cJSON *doc, const char *name) {
    const cJSON *limit = cJSON_GetObjectItemCaseSensitive(doc, "limit");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(limit, "usage");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(usage, name);
    assert_true(cJSON_IsNumber(value));
    return (uint64_t)value->valuedouble;
}

typedef struct bounds {
    uint64_t tpm_low, tpm_high, spend_low, spend_high, conc_low, conc_high;
} bounds;

/* What the acknowledged answers imply, and what the calls in flight could add. */
static bounds bounds_of(const client *clients) {
    bounds b = {0};
    for (int i = 0; i < CLIENTS; i++) {
        const client *c = &clients[i];
        b.tpm_low += c->reserved * TPM_RESERVE + c->completed * TPM_ACTUAL;
        b.spend_low += c->reserved * SPEND_RESERVE + c->completed * SPEND_ACTUAL;
        b.conc_low += c->reserved;
    }
    b.tpm_high = b.tpm_low;
    b.spend_high = b.spend_low;
    b.conc_high = b.conc_low;
    for (int i = 0; i < CLIENTS; i++) {
        const client *c = &clients[i];
        if (c->state == RESERVE_SENT) { /* may have been admitted */
            b.tpm_high += TPM_RESERVE;
            b.spend_high += SPEND_RESERVE;
            b.conc_high += 1;
        } else if (c->state == COMPLETE_SENT) { /* counted as reserved: may be completed */
            b.tpm_low -= TPM_RESERVE - TPM_ACTUAL;
            b.spend_low -= SPEND_RESERVE - SPEND_ACTUAL;
            b.conc_low -= 1;
        }
    }
    return b;
}

static void check_usage(rl_test_daemon *daemon, const bounds *b) {
    cJSON *tpm = usage_of(daemon, TPM), *spend = usage_of(daemon, SPEND), *conc = usage_of(daemon, CONC);
    uint64_t tpm_used = field(tpm, "used"), spend_used = field(spend, "used"), conc_used = field(conc, "used");
    if (tpm_used < b->tpm_low || tpm_used > b->tpm_high || spend_used < b->spend_low || spend_used > b->spend_high ||
        conc_used < b->conc_low || conc_used > b->conc_high)
        fail_msg("usage after kill -9: tpm %llu in [%llu, %llu], spend %llu in [%llu, %llu], conc %llu in [%llu, %llu]",
                 (unsigned long long)tpm_used, (unsigned long long)b->tpm_low, (unsigned long long)b->tpm_high,
                 (unsigned long long)spend_used, (unsigned long long)b->spend_low,
                 (unsigned long long)b->spend_high, (unsigned long long)conc_used,
                 (unsigned long long)b->conc_low, (unsigned long long)b->conc_high);
    assert_int_equal(field(spend, "used"), field(spend, "committed") + field(spend, "reserved"));
    cJSON_Delete(tpm);
    cJSON_Delete(spend);
    cJSON_Delete(conc);
}

/* Every audit entry of key, paging by next_since_unix_ms. */
static uint64_t audit_count(rl_test_daemon *daemon, const char *key, uint64_t actual) {
    uint64_t since = 0, count = 0;
    for (;;) {
        char path[160];
        snprintf(path, sizeof path, "/v1/admin/audit?key=%s&since_unix_ms=%llu&limit=1000", key,
                 (unsigned long long)since);
        rl_test_response response;
        assert_int_equal(rl_test_daemon_http(daemon, "GET", path, NULL, &response), 200);
        cJSON *doc = cJSON_Parse(response.body);
        rl_test_response_free(&response);
        assert_non_null(doc);
        const cJSON *entries = cJSON_GetObjectItemCaseSensitive(doc, "entries");
        const cJSON *entry;
        int n = 0;
        cJSON_ArrayForEach(entry, entries) {
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(entry, "actual")->valuedouble, (double)actual);
            n++;
        }
        count += (uint64_t)n;
        since = (uint64_t)cJSON_GetObjectItemCaseSensitive(doc, "next_since_unix_ms")->valuedouble;
        cJSON_Delete(doc);
        if (n == 0) return count;
    }
}

/* state: the daemon's config.yaml (journal_fsync, compaction). */
static void test_usage_survives_kill_9(void **state) {
    const char *config = *state;
    rl_test_daemon daemon;
    rl_test_daemon_init(&daemon);
    rl_test_daemon_write_registry(&daemon, REGISTRY);
    rl_test_daemon_write_config(&daemon, config);
    const char *args[] = {"-c", daemon.config_path, NULL};
    static client clients[CLIENTS];
    memset(clients, 0, sizeof clients);
    for (int round = 0; round < ROUNDS; round++) {
        assert_true(rl_test_daemon_start(&daemon, args));
        /* Last round's calls in flight, retried with the same lease ids:
         * then usage is exactly what the clients saw. */
        for (int i = 0; i < CLIENTS; i++) {
            client *c = &clients[i];
            if (c->state == RESERVE_SENT || c->state == COMPLETE_SENT) assert_true(step(&daemon.client, c));
        }
        bounds exact = bounds_of(clients);
        check_usage(&daemon, &exact);
        uint64_t completed = 0;
        for (int i = 0; i < CLIENTS; i++) completed += clients[i].completed;
        assert_int_equal(audit_count(&daemon, SPEND, SPEND_ACTUAL), completed);
        assert_int_equal(audit_count(&daemon, TPM, TPM_ACTUAL), completed);

        pthread_t threads[CLIENTS];
        for (int i = 0; i < CLIENTS; i++) {
            clients[i].port = daemon.port;
            atomic_store(&clients[i].stop, false);
            assert_int_equal(pthread_create(&threads[i], NULL, client_main, &clients[i]), 0);
        }
        rl_test_sleep_ms(50 + (long)(rand_r(&seed) % 400));
        rl_test_daemon_stop_with(&daemon, SIGKILL);
        for (int i = 0; i < CLIENTS; i++) {
            atomic_store(&clients[i].stop, true);
            pthread_join(threads[i], NULL);
        }
        assert_true(rl_test_daemon_start(&daemon, args));
        bounds b = bounds_of(clients);
        check_usage(&daemon, &b);
        assert_int_equal(rl_test_daemon_stop(&daemon), 0);
    }
    uint64_t total = 0;
    for (int i = 0; i < CLIENTS; i++) total += clients[i].completed + clients[i].reserved;
    print_message("%llu leases acknowledged over %d kills\n", (unsigned long long)total, ROUNDS);
    assert_true(total > 0);
    rl_test_daemon_cleanup(&daemon);
}

int main(void) {
    const char *fixed = getenv("RL_TEST_SEED");
    seed = fixed != NULL ? (unsigned)strtoul(fixed, NULL, 10) : (unsigned)time(NULL);
    print_message("RL_TEST_SEED=%u\n", seed);
    rl_test_http_global_init();
    /* everysec and off write before answering too (the kernel has it: a
     * kill -9 loses nothing; only a power loss could). */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_usage_survives_kill_9, "memory:\n  journal_fsync: always\n"),
        cmocka_unit_test_prestate(test_usage_survives_kill_9, "memory:\n  journal_fsync: everysec\n"),
        cmocka_unit_test_prestate(test_usage_survives_kill_9, "memory:\n  journal_fsync: off\n"),
        /* The journal compacted again and again while the kills come. */
        cmocka_unit_test_prestate(test_usage_survives_kill_9,
                                  "memory:\n  journal_fsync: everysec\n  journal_compact_bytes: 32768\n"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
