#ifndef WEFT_VERSION_H
#define WEFT_VERSION_H
#define WEFT_VERSION "0.1.0"
#endif
