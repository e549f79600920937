/* embed.c - build-time tool: turn a file into a C array so the binary
 * carries its own data. usage: embed SYMBOL INPUT OUTPUT.c
 * Writes OUTPUT.c via a temp file and rename, so a failed build never
 * leaves a half-written source behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: embed SYMBOL INPUT OUTPUT.c\n");
        return 2;
    }
    FILE *in = fopen(argv[2], "rb");
    if (!in) {
        perror(argv[2]);
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[3]);
    FILE *out = fopen(tmp, "w");
    if (!out) {
        perror(tmp);
        return 1;
    }
    fprintf(out, "/* generated from %s by src/tools/embed.c; do not edit */\n", argv[2]);
    fprintf(out, "#include <stddef.h>\nconst unsigned char %s[] = {", argv[1]);
    size_t n = 0;
    int c;
    while ((c = fgetc(in)) != EOF) {
        fprintf(out, "%s%d,", n % 20 == 0 ? "\n" : "", c);
        n++;
    }
    fprintf(out, "0};\nconst size_t %s_len = %zu;\n", argv[1], n);
    int bad = ferror(in) || fclose(out) != 0;
    fclose(in);
    if (bad || rename(tmp, argv[3]) != 0) {
        remove(tmp);
        fprintf(stderr, "embed: could not write %s\n", argv[3]);
        return 1;
    }
    return 0;
}
