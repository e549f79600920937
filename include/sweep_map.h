/* sweep_map.h - where each run of a sweep's grid goes on a map: which
 * axes are the rows, the columns and the pages, the seeds folded into
 * their cell. The live view of a sweep (tui_sweep.c) and the map figure
 * (plot.c) lay out the same grid with it. Pure: no I/O, no allocation.
 *
 * Not here: the runs (sweep.c), drawing (tui_sweep.c, plot.c).
 */
#ifndef NS_SWEEP_MAP_H
#define NS_SWEEP_MAP_H

#include "sweep.h"

/* One cell per combination of the axes but "seed" (the seeds fold into
 * their cell: mean and spread). Two axes are the rows and the columns; by
 * default the axis with the most values is the rows and the next the
 * columns (ties: name order, so the first two). Any other axis is paged:
 * one page per combination of their values, the first such axis varying
 * slowest. With one axis (but seed) there is one column; with none, one
 * cell. */
typedef struct {
    int n_axes;
    int count[SWEEP_MAX_AXES]; /* values per axis */
    int row, col;              /* the axes of the rows and columns, -1 = none */
    int seed;                  /* the folded axis, -1 = none */
    int n_page;
    int page_axis[SWEEP_MAX_AXES]; /* the paged axes, slowest first */
    long pages;                /* >= 1 */
    int rows, cols;            /* cells on a page, >= 1 each */
    int group;                 /* -1, or a paged axis drawn instead as blocks of
                                  columns side by side: column c is the group's
                                  value c / count[col], col's value c % count[col] */
} sweep_map;

/* The layout of axes named names[0..n) with count[i] values each, row and
 * col the axes asked for (-1 = the default; a seed axis or row == col is
 * refused). 0, or -1 (then the default is used). */
int sweep_map_make(sweep_map *m, int n_axes, const char *const *names, const int *count,
                   int row, int col);
/* Draw the paged axis with the fewest values (Post-LN and Pre-LN) as
 * blocks of columns side by side when all of them fit in max_cols cells,
 * so that they share a page; m fresh from sweep_map_make. */
void sweep_map_group(sweep_map *m, int max_cols);
/* Column c's value index on the columns' axis (c itself without a group). */
int sweep_map_col_value(const sweep_map *m, int c);
/* Where the run with value indices idx[0..n_axes) goes. */
void sweep_map_place(const sweep_map *m, const int *idx, long *page, int *r, int *c);
/* The value indices of the paged axes on page p (into idx; the others
 * are left as they are). */
void sweep_map_page_values(const sweep_map *m, long p, int *idx);

#endif
