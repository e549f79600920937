/* csv.c - splitting normscope's own CSV lines and finding their columns
 * by name (csv.h). Not here: reading files, the columns' meaning. */
#include "csv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int csv_split(char *line, char **fields, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line;;) {
        if (n == max)
            return max + 1;
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            return n;
        *c = 0;
        p = c + 1;
    }
}

int csv_find(char *const *fields, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(fields[i], name))
            return i;
    return -1;
}

double csv_num(const char *field)
{
    char *end;
    if (!*field)
        return NAN;
    double x = strtod(field, &end);
    return end == field || *end ? NAN : x;
}
