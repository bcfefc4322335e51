# Turns a file into a C byte array: cmake -DIN=f -DOUT=f.c -DNAME=sym -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "#include <stddef.h>\nconst unsigned char ${NAME}[] = {\n${body}0x00\n};\nconst size_t ${NAME}_len = ${bytes};\n")
