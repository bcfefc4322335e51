#include "swish.c"
