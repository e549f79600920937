/* csv.h - the comma-separated files normscope writes itself (a run's
 * --csv, a sweep's results.csv), split into fields in place and their
 * columns found by name.
 *
 * These files never quote: a field holds no comma, quote or newline (a
 * sweep refuses such values), so a line splits at every comma.
 * Not here: reading lines from a file (the callers use getline or
 * plot_read_lines), what the columns mean (metrics.c, sweep_results.c).
 */
#ifndef NS_CSV_H
#define NS_CSV_H

/* Split line in place at its commas, after cutting a trailing "\r\n" or
 * "\n": fields[0..n) point into line, empty fields are "". Returns n, or
 * max + 1 when the line has more than max fields (then only the first
 * max are set). */
int csv_split(char *line, char **fields, int max);
/* The index of the first of fields[0..n) equal to name, or -1. */
int csv_find(char *const *fields, int n, const char *name);
/* A field as a number: NaN when it is empty or not wholly a number. */
double csv_num(const char *field);

#endif
