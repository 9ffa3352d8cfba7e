/* preset_marks.c — see preset_marks.h. */
#include "client/preset_marks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const rl__preset_mark *rl__preset_marks_find(const rl__preset_marks *marks, const char *key) {
    for (size_t i = 0; i < marks->count; i++)
        if (strcmp(marks->marks[i].def.key, key) == 0) return &marks->marks[i];
    return NULL;
}

bool rl__preset_marks_set(rl__preset_marks *marks, const rl_limit_def *def, const char *origin) {
    rl__preset_mark *mark = (rl__preset_mark *)rl__preset_marks_find(marks, def->key);
    if (mark == NULL) {
        if (marks->count == marks->cap) {
            size_t cap = marks->cap > 0 ? marks->cap * 2 : 16;
            rl__preset_mark *grown = realloc(marks->marks, cap * sizeof *grown);
            if (grown == NULL) return false;
            marks->marks = grown;
            marks->cap = cap;
        }
        mark = &marks->marks[marks->count++];
    }
    mark->def = *def;
    snprintf(mark->origin, sizeof mark->origin, "%s", origin);
    return true;
}

void rl__preset_marks_forget(rl__preset_marks *marks, const char *key) {
    const rl__preset_mark *mark = rl__preset_marks_find(marks, key);
    if (mark == NULL) return;
    size_t i = (size_t)(mark - marks->marks);
    marks->marks[i] = marks->marks[--marks->count];
}

void rl__preset_marks_free(rl__preset_marks *marks) {
    free(marks->marks);
    memset(marks, 0, sizeof *marks);
}
