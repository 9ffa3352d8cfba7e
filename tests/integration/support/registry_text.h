/* support/registry_text.h — what a daemon's registry holds, read as the
 * daemon would read it.
 *
 * The registry is limits.json with its log (limits.json.log) replayed over
 * it (ratelimiter/registry.h); a test that wants "the file" wants both. The
 * files are copied first and the copies opened, so that reading never
 * changes them (opening cuts a torn tail) and works while the daemon runs
 * (between its writes) or after a kill -9.
 */
#ifndef RL_TEST_REGISTRY_TEXT_H
#define RL_TEST_REGISTRY_TEXT_H

/* The definitions the registry at path holds, as limits.json would hold
 * them once compacted: "[\n  {...},\n  {...}\n]\n" in key order, one a
 * line, malloc'd (free() it). NULL if neither file exists. If the files
 * do not open, NULL with the reason in err (err_size bytes). */
char *rl_test_registry_text(const char *path, char *err, unsigned long err_size);

#endif
