/* tui_sweep.h - the live view of a sweep, without curses: where each run
 * of the grid goes on the map (shared with the map figure), the runs'
 * states and numbers, the cells they fold into, the color scale, the
 * selection and paging, and the frames drawn into the cell grid (tui.h).
 *
 * Threads: the sweep's scheduler (sweep.c, its own thread) reports a run
 * starting and ending on the board (a mutex held to copy a few numbers);
 * the UI thread copies the board once per frame and reads the running
 * runs' CSVs itself, complete lines only. Only tui_curses.c calls curses.
 *
 * Not here: spawning and reaping the runs, results.csv (sweep.c), the
 * terminal (tui_curses.c).
 */
#ifndef NS_TUI_SWEEP_H
#define NS_TUI_SWEEP_H

#include <pthread.h>
#include <stddef.h>

#include "plot.h"
#include "sweep.h"
#include "tui.h"

/* ---- the map: which axis goes where ---------------------------------------
 * One cell per combination of the axes but "seed" (the seeds fold into
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
} sweep_map;

/* The layout of axes named names[0..n) with count[i] values each, row and
 * col the axes asked for (-1 = the default; a seed axis or row == col is
 * refused). 0, or -1 (then the default is used). */
int sweep_map_make(sweep_map *m, int n_axes, const char *const *names, const int *count,
                   int row, int col);
/* Where the run with value indices idx[0..n_axes) goes. */
void sweep_map_place(const sweep_map *m, const int *idx, long *page, int *r, int *c);
/* The value indices of the paged axes on page p (into idx; the others
 * are left as they are). */
void sweep_map_page_values(const sweep_map *m, long p, int *idx);

#endif
