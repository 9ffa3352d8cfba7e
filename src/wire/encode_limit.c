/* encode_limit.c — LimitDefinition and LimitInfo objects (admin API and the
 * registry file). */
#include <string.h>

#include "wire/wire.h"

#define LIT(buf, text) rl__buf_append((buf), (text), sizeof(text) - 1)

/* Appends a string field of a definition, which may lack its NUL if corrupt. */
static void append_field_string(rl_buf *buf, const char *text, size_t size) {
    rl__buf_append_json_string(buf, text, strnlen(text, size));
}

/* A definition whose key member is named name_member ("{\"key\":"). */
static void encode_def(rl_buf *buf, const rl_limit_def *def, const char *name_member, size_t name_member_len) {
    rl__buf_append(buf, name_member, name_member_len);
    append_field_string(buf, def->key, sizeof def->key);
    LIT(buf, ",\"kind\":\"");
    rl__buf_append_str(buf, rl_kind_name(def->kind));
    LIT(buf, "\",\"capacity\":");
    rl__buf_append_u64(buf, def->capacity);
    LIT(buf, ",\"window_seconds\":");
    rl__buf_append_u64(buf, def->window_seconds);
    LIT(buf, ",\"timeout_seconds\":");
    rl__buf_append_u64(buf, def->timeout_seconds);
    LIT(buf, ",\"unit\":");
    append_field_string(buf, def->unit, sizeof def->unit);
    LIT(buf, ",\"description\":");
    append_field_string(buf, def->description, sizeof def->description);
    LIT(buf, ",\"overage\":\"");
    rl__buf_append_str(buf, rl_overage_name(def->overage));
    LIT(buf, "\"");
    if (def->kind == RL_KIND_BUDGET) { /* the wire grows: other kinds as they were */
        LIT(buf, ",\"period\":\"");
        rl__buf_append_str(buf, rl_period_name(def->period));
        LIT(buf, "\",\"timezone\":");
        append_field_string(buf, def->timezone, sizeof def->timezone);
    }
    LIT(buf, "}");
}

void rl__wire_encode_limit_def(rl_buf *buf, const rl_limit_def *def) {
    encode_def(buf, def, "{\"key\":", sizeof "{\"key\":" - 1);
}

void rl__wire_encode_template_def(rl_buf *buf, const rl_limit_def *def) {
    encode_def(buf, def, "{\"pattern\":", sizeof "{\"pattern\":" - 1);
}

void rl__wire_encode_limit_info(rl_buf *buf, const rl_limit_def *def, const rl_limit_usage *usage) {
    LIT(buf, "{\"definition\":");
    rl__wire_encode_limit_def(buf, def);
    if (usage == NULL) {
        /* No live state to show (e.g. the backend has not seen the limit). */
        LIT(buf, ",\"status\":\"active\",\"pending_decrease_to\":0}");
        return;
    }
    LIT(buf, ",\"status\":\"");
    rl__buf_append_str(buf, rl_limit_status_name(usage->status));
    LIT(buf, "\",\"pending_decrease_to\":");
    /* api.md: set only while decreasing. */
    rl__buf_append_u64(buf, usage->status == RL_LIMIT_STATUS_DECREASING ? usage->pending_decrease_to : 0);
    LIT(buf, ",\"usage\":{\"capacity\":");
    rl__buf_append_u64(buf, usage->capacity);
    LIT(buf, ",\"used\":");
    rl__buf_append_u64(buf, usage->used);
    LIT(buf, ",\"available\":");
    rl__buf_append_u64(buf, usage->available);
    LIT(buf, ",\"active\":");
    rl__buf_append_u64(buf, usage->active);
    LIT(buf, ",\"debt\":");
    rl__buf_append_u64(buf, usage->debt);
    LIT(buf, ",\"debt_total\":");
    rl__buf_append_u64(buf, usage->debt_total);
    LIT(buf, ",\"overage_denied_total\":");
    rl__buf_append_u64(buf, usage->overage_denied_total);
    if (usage->allotted != 0) { /* only while daemons hold allotments of it: answers without stay as they were */
        LIT(buf, ",\"allotted\":");
        rl__buf_append_u64(buf, usage->allotted);
    }
    if (def->kind == RL_KIND_BUDGET) {
        LIT(buf, ",\"period_start_unix_ms\":");
        rl__buf_append_u64(buf, usage->period_start_unix_ms);
        LIT(buf, ",\"period_end_unix_ms\":");
        rl__buf_append_u64(buf, usage->period_end_unix_ms);
        LIT(buf, ",\"committed\":");
        rl__buf_append_u64(buf, usage->committed);
        LIT(buf, ",\"reserved\":");
        rl__buf_append_u64(buf, usage->reserved);
    }
    LIT(buf, "}}");
}

void rl__wire_encode_limit_info_from(rl_buf *buf, const rl_limit_def *def, const rl_limit_usage *usage,
                                     const rl_wire_limit_source *source) {
    rl__wire_encode_limit_info(buf, def, usage);
    if (source == NULL) return;
    /* The object is open again for the members after usage: drop its '}'. */
    bool template_made = source->template_pattern != NULL && source->template_pattern[0] != '\0';
    bool preset_made = source->preset != NULL && source->preset[0] != '\0';
    if ((!template_made && !preset_made) || buf->failed) return;
    buf->len--;
    if (template_made) {
        LIT(buf, ",\"template\":");
        append_field_string(buf, source->template_pattern, RL_KEY_MAX_LEN + 1);
    }
    if (preset_made) {
        LIT(buf, ",\"preset\":");
        append_field_string(buf, source->preset, RL_KEY_MAX_LEN + 1);
    }
    LIT(buf, "}");
}
