/* redis/lua.h — the backend's Lua scripts, embedded at build time from
 * src/backend/redis/lua (see CMakeLists.txt). Each script sent to Redis is
 * the preludes rl_lua_common, rl_lua_audit, rl_lua_budget and rl_lua_made
 * followed by one entry script. */
#ifndef RL_REDIS_LUA_H
#define RL_REDIS_LUA_H

extern const char rl_lua_common[];
extern const char rl_lua_audit[];
extern const char rl_lua_budget[];
extern const char rl_lua_made[];
extern const char rl_lua_reserve[];
extern const char rl_lua_complete[];
extern const char rl_lua_define[];
extern const char rl_lua_usage[];
extern const char rl_lua_sweep[];
extern const char rl_lua_definitions[];
extern const char rl_lua_changes[];
extern const char rl_lua_audit_page[];
extern const char rl_lua_allot[];
extern const char rl_lua_settle[];
extern const char rl_lua_delete[];
extern const char rl_lua_template[];

#endif
