# Writes the bytes of IN as a comma-separated list of hex literals to OUT,
# for `static const unsigned char x[] = { #include "OUT" };`.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "${bytes}\n")
