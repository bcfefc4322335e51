/* plan_search.h: `weft plan`, the search for the fastest (or smallest)
 * parallel layout of a plan's model on a cluster. */
#ifndef WEFT_PLAN_SEARCH_H
#define WEFT_PLAN_SEARCH_H

/* argv: the options after "plan".  Returns weft's exit code: 0 a layout was
 * found, 1 none fits or the plan is wrong (with the nearest feasible change),
 * 2 usage error. */
int plan_search_main(int argc, char **argv);

#endif
