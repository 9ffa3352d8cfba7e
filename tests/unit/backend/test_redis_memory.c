/* test_redis_memory.c — reading INFO memory, and what it means for a store
 * of leases (src/backend/redis/redis_memory.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend/redis/redis_memory.h"

/* As Redis 7 writes it (abridged), CRLF line ends. */
static const char info[] = "# Memory\r\n"
                           "used_memory:1048576\r\n"
                           "used_memory_human:1.00M\r\n"
                           "used_memory_rss:5000000\r\n"
                           "maxmemory:2000000\r\n"
                           "maxmemory_human:1.91M\r\n"
                           "maxmemory_policy:noeviction\r\n"
                           "allocator_frag_ratio:1.00\r\n";

static void parses_the_three_fields(void **state) {
    (void)state;
    rl_redis_memory m;
    assert_true(rl_redis_memory_parse(info, strlen(info), &m));
    assert_int_equal(m.used_bytes, 1048576); /* not used_memory_human nor used_memory_rss */
    assert_int_equal(m.max_bytes, 2000000);  /* not maxmemory_human nor maxmemory_policy */
    assert_string_equal(m.policy, "noeviction");
    assert_false(rl_redis_memory_evicts(&m));
    /* LF alone, and the last line without an end. */
    const char lf[] = "used_memory:10\nmaxmemory:0\nmaxmemory_policy:allkeys-lru";
    assert_true(rl_redis_memory_parse(lf, strlen(lf), &m));
    assert_int_equal(m.max_bytes, 0);
    assert_string_equal(m.policy, "allkeys-lru");
    assert_true(rl_redis_memory_evicts(&m));
}

static void refuses_what_is_missing_or_malformed(void **state) {
    (void)state;
    rl_redis_memory m = {7, 7, "kept"};
    const char *bad[] = {
        "",
        "used_memory:1\r\nmaxmemory:0\r\n",                              /* no policy */
        "used_memory:1\r\nmaxmemory_policy:noeviction\r\n",              /* no maxmemory */
        "used_memory:x\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n",
        "used_memory:\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n",
        "used_memory:99999999999999999999999\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n",
        "used_memory:1\r\nmaxmemory:0\r\nmaxmemory_policy:\r\n",
        "used_memory:1\r\nmaxmemory:0\r\nmaxmemory_policy:no eviction\r\n",
        "used_memory:1\r\nmaxmemory:0\r\nmaxmemory_policy:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (rl_redis_memory_parse(bad[i], strlen(bad[i]), &m)) fail_msg("accepted: %s", bad[i]);
        assert_int_equal(m.used_bytes, 7); /* untouched */
    }
}

static void judges_how_close_to_refusing_writes(void **state) {
    (void)state;
    char detail[512];
    rl_redis_memory m = {100, 0, "noeviction"};
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_OK); /* no maxmemory */
    m = (rl_redis_memory){899, 1000, "noeviction"};
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_OK);
    m = (rl_redis_memory){900, 1000, "noeviction"};
    detail[0] = '\0';
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_NEAR);
    assert_non_null(strstr(detail, "90.0% of maxmemory"));
    m = (rl_redis_memory){3865470566ull, 4294967296ull, "noeviction"}; /* 90% of 4 GiB */
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_NEAR);
    m = (rl_redis_memory){1000, 1000, "noeviction"};
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_FULL);
    assert_non_null(strstr(detail, "Redis refuses writes"));
    m = (rl_redis_memory){UINT64_MAX, UINT64_MAX - 1, "noeviction"};
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_FULL);
    m = (rl_redis_memory){UINT64_MAX - 1, UINT64_MAX, "noeviction"}; /* no overflow */
    assert_int_equal(rl_redis_memory_judge(&m, detail, sizeof detail), RL_REDIS_MEMORY_NEAR);
}

static void says_why_an_evicting_redis_is_refused(void **state) {
    (void)state;
    rl_redis_memory m = {1, 0, "volatile-lru"};
    char text[512];
    rl_redis_memory_eviction_refusal(&m, "10.0.0.5:6380", text, sizeof text);
    assert_non_null(strstr(text, "10.0.0.5:6380"));
    assert_non_null(strstr(text, "maxmemory-policy volatile-lru"));
    assert_non_null(strstr(text, "noeviction"));
    assert_non_null(strstr(text, "redis.allow_eviction: true"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_three_fields),
        cmocka_unit_test(refuses_what_is_missing_or_malformed),
        cmocka_unit_test(judges_how_close_to_refusing_writes),
        cmocka_unit_test(says_why_an_evicting_redis_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
