/* test_json_arena.c — cJSON trees built in the per-thread arena: parsed and
 * deleted inside begin/end, falling back to malloc when full, and plain
 * malloc/free outside (other cJSON users unaffected), on several threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/json_arena.h"
#include "wire/wire.h"

static bool in_arena(const rl_json_arena *arena, const void *p) {
    return (const char *)p >= arena->base && (const char *)p < arena->base + arena->cap;
}

static int setup(void **state) {
    (void)state;
    rl_json_arena_install();
    rl_json_arena_install(); /* idempotent */
    return 0;
}

static void test_parse_inside_arena(void **state) {
    (void)state;
    rl_json_arena arena;
    assert_true(rl_json_arena_init(&arena, 64 * 1024));
    for (int round = 0; round < 3; round++) {
        rl_json_arena_begin(&arena);
        cJSON *root = cJSON_Parse("{\"a\":[1,2,3],\"b\":\"text\"}");
        assert_non_null(root);
        assert_true(in_arena(&arena, root));
        assert_true(arena.used > 0);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "a")), 3);
        assert_string_equal(cJSON_GetObjectItem(root, "b")->valuestring, "text");
        cJSON_Delete(root);
        rl_json_arena_end(&arena);
        assert_int_equal(arena.used, 0);
    }
    rl_json_arena_free(&arena);
}

static void test_full_arena_falls_back_to_malloc(void **state) {
    (void)state;
    rl_json_arena arena;
    assert_true(rl_json_arena_init(&arena, 1024)); /* a few nodes only */
    char text[64 * 1024];
    size_t len = 0;
    len += (size_t)snprintf(text + len, sizeof text - len, "[");
    for (int i = 0; i < 2000; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\"item-%d\"", i ? "," : "", i);
    snprintf(text + len, sizeof text - len, "]");
    rl_json_arena_begin(&arena);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(root), 2000);
    assert_string_equal(cJSON_GetArrayItem(root, 1999)->valuestring, "item-1999");
    cJSON_Delete(root); /* frees the malloc'd part; ASan would see a leak or a bad free */
    rl_json_arena_end(&arena);
    rl_json_arena_free(&arena);
}

static void test_outside_arena_is_malloc(void **state) {
    (void)state;
    rl_json_arena arena;
    assert_true(rl_json_arena_init(&arena, 64 * 1024));
    rl_json_arena_begin(&arena);
    rl_json_arena_end(&arena);
    cJSON *root = cJSON_Parse("{\"x\":1}");
    assert_false(in_arena(&arena, root));
    char *printed = cJSON_PrintUnformatted(root);
    assert_string_equal(printed, "{\"x\":1}");
    cJSON_free(printed);
    cJSON_Delete(root);
    rl_json_arena_free(&arena);
}

/* The wire decoders through the arena, as the server runs them. */
static void test_wire_decode_in_arena(void **state) {
    (void)state;
    rl_json_arena arena;
    assert_true(rl_json_arena_init(&arena, 64 * 1024));
    const char *body = "{\"lease_id\":\"01J0000000000000000000000A\",\"requirements\":"
                       "[{\"key\":\"k:rpm\",\"amount\":1},{\"key\":\"k:tpm\",\"amount\":1800}]}";
    for (int round = 0; round < 100; round++) {
        rl_json_arena_begin(&arena);
        rl_wire_reserves msg;
        char detail[RL_WIRE_DETAIL_SIZE];
        assert_int_equal(rl_wire_decode_reserve(body, strlen(body), &msg, detail), RL_OK);
        assert_int_equal(msg.requests[0].requirement_count, 2);
        assert_string_equal(msg.requests[0].requirements[1].key, "k:tpm");
        rl_wire_reserves_free(&msg);
        assert_int_equal(rl_wire_decode_reserve("{", 1, &msg, detail), RL_INVALID_REQUEST);
        rl_json_arena_end(&arena);
    }
    rl_json_arena_free(&arena);
}

static void *thread_main(void *arg) {
    (void)arg;
    rl_json_arena arena;
    if (!rl_json_arena_init(&arena, 4096)) return (void *)1;
    uintptr_t failures = 0;
    for (int i = 0; i < 2000; i++) {
        rl_json_arena_begin(&arena);
        cJSON *root = cJSON_Parse("{\"a\":[1,2,3,4,5,6,7,8,9,10],\"b\":{\"c\":\"d\"}}");
        if (root == NULL || cJSON_GetArraySize(cJSON_GetObjectItem(root, "a")) != 10) failures++;
        cJSON_Delete(root);
        rl_json_arena_end(&arena);
    }
    rl_json_arena_free(&arena);
    return (void *)failures;
}

static void test_threads_have_their_own_arena(void **state) {
    (void)state;
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&threads[i], NULL, thread_main, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *failures = NULL;
        pthread_join(threads[i], &failures);
        assert_null(failures);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_inside_arena),
        cmocka_unit_test(test_full_arena_falls_back_to_malloc),
        cmocka_unit_test(test_outside_arena_is_malloc),
        cmocka_unit_test(test_wire_decode_in_arena),
        cmocka_unit_test(test_threads_have_their_own_arena),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
