/* user_kernel_check.c: reads a user kernel's C file with libclang (the C
 * API) and holds it to its kind's contract (user_kernel.h) before anything
 * is generated: the file must parse as C11 (clang's own errors, with
 * file:line:col), define the named functions with the kind's signatures,
 * and stay inside what both backends can run as a per-value inline
 * function: no mutable global or static state, no calls but the math
 * library and the file's own functions, no recursion, no inline assembly,
 * no variable-length arrays, no pointer arithmetic or indexing that could
 * leave the value it was given (a syntactic check; a rowwise kernel's
 * forward and backward may index their pointers by a loop variable counted
 * from 0 while below n), no macros of its own,
 * no headers but the system's.
 * Each refusal names the place and the rule broken.
 *
 * It also keeps what the emitter copies (the file's functions and
 * constants, as static inline C, in source order) and counts each
 * function's floating-point operations from the AST for the cost model. */
#include <clang-c/Index.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user_kernel.h"

/* What the kernel may call from the C library: <math.h> (float and double
 * forms), and the builtins its classification macros expand to. */
static const char *const MATH[] = {
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "hypot",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "erf", "erfc", "tgamma", "lgamma", "fabs", "fmin", "fmax", "fma", "fmod", "floor",
    "ceil", "round", "trunc", "rint", "nearbyint", "copysign", "fdim", "remainder",
    "__builtin_isnan", "__builtin_isinf", "__builtin_isfinite", "__builtin_signbit",
    "__builtin_isinf_sign", "__builtin_huge_valf", "__builtin_inff", "__builtin_nanf",
    "__builtin_huge_val", "__builtin_inf", "__builtin_nan", "__builtin_fabsf", "__builtin_fabs",
    "__builtin_isless", "__builtin_isgreater", "__builtin_islessequal", "__builtin_isgreaterequal",
    "__builtin_isunordered", "__builtin_fpclassify", "__builtin_isnormal",
};

static int is_math(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof MATH / sizeof *MATH; i++) {
        size_t m = strlen(MATH[i]);
        /* sqrt, or its float form sqrtf */
        if (strcmp(name, MATH[i]) == 0 || (n == m + 1 && strncmp(name, MATH[i], m) == 0 && name[m] == 'f'))
            return 1;
    }
    return 0;
}

/* The check of one file. */
typedef struct {
    user_kernel *k;
    const char *plan;       /* the plan's path, for errors about the plan's fields */
    CXTranslationUnit tu;
    const char *src;        /* the file's bytes */
    long src_len;
    int failed;
    /* the file's functions: name, definition cursor, calls (indices), FLOPs */
    struct fn {
        char name[128];
        CXCursor def;
        int defined;
        int *calls, n_calls;
        double flops;       /* own arithmetic and math calls */
        int state;          /* DFS: 0 new, 1 on the stack, 2 done */
    } *fns;
    int n_fns;
    int cur;                /* the function being walked */
    /* a rowwise kernel's forward or backward being walked: its parameter n
     * and its row loops `for (int i = 0; i < n; i++)` */
    int rowfn;
    CXCursor nparm;
    struct row_loop { CXCursor var; unsigned body_b, body_e, inc_b, inc_e; } loops[64];
    int n_loops;
} ctx;

static void fail_at(ctx *c, CXSourceLocation loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(ctx *c, CXSourceLocation loc, const char *fmt, ...) {
    if (c->failed) return;  /* the first problem only: the rest may follow from it */
    c->failed = 1;
    unsigned line, col;
    clang_getSpellingLocation(loc, NULL, &line, &col, NULL);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wf_error("%s:%u:%u: %s", c->k->path, line, col, msg);
}

static int find_fn(ctx *c, const char *name) {
    for (int i = 0; i < c->n_fns; i++)
        if (strcmp(c->fns[i].name, name) == 0) return i;
    return -1;
}

static int add_fn(ctx *c, const char *name) {
    int i = find_fn(c, name);
    if (i >= 0) return i;
    c->fns = wf_checked(realloc(c->fns, (size_t)(c->n_fns + 1) * sizeof *c->fns), "kernel check");
    memset(&c->fns[c->n_fns], 0, sizeof *c->fns);
    snprintf(c->fns[c->n_fns].name, sizeof c->fns[c->n_fns].name, "%s", name);
    return c->n_fns++;
}

static unsigned offset_of(CXSourceLocation loc) {
    unsigned off;
    clang_getSpellingLocation(loc, NULL, NULL, NULL, &off);
    return off;
}

static int in_main_file(CXCursor cur) {
    return clang_Location_isFromMainFile(clang_getCursorLocation(cur));
}

/* const, or an array (of arrays) of const elements */
static int is_const(CXType t) {
    /* the element types as written: libclang 14's canonical array type
     * drops its elements' const */
    for (int depth = 0; depth < 8; depth++) {
        int k = clang_getCanonicalType(t).kind;
        if (k != CXType_ConstantArray && k != CXType_IncompleteArray) break;
        CXType e = clang_getArrayElementType(t);
        t = e.kind != CXType_Invalid ? e : clang_getArrayElementType(clang_getCanonicalType(t));
    }
    return clang_isConstQualifiedType(t) || clang_isConstQualifiedType(clang_getCanonicalType(t));
}

static int is_float(CXType t) {
    return clang_getCanonicalType(t).kind == CXType_Float;
}

/* The spelling of the operator token of a binary or unary expression: the
 * first token at or after `from` (libclang 14 has no opcode query). */
static void token_at(ctx *c, CXCursor cur, unsigned from, char *out, size_t n) {
    CXToken *toks;
    unsigned nt;
    out[0] = 0;
    clang_tokenize(c->tu, clang_getCursorExtent(cur), &toks, &nt);
    for (unsigned i = 0; i < nt; i++) {
        if (offset_of(clang_getTokenLocation(c->tu, toks[i])) < from) continue;
        CXString s = clang_getTokenSpelling(c->tu, toks[i]);
        snprintf(out, n, "%s", clang_getCString(s));
        clang_disposeString(s);
        break;
    }
    clang_disposeTokens(c->tu, toks, nt);
}

typedef struct { CXCursor kids[4]; int n; } kids;
static enum CXChildVisitResult collect(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    kids *k = d;
    if (k->n < 4) k->kids[k->n] = cur;
    k->n++;
    return CXChildVisit_Continue;
}

static int is_pointer(CXType t) {
    CXType ct = clang_getCanonicalType(t);
    return ct.kind == CXType_Pointer || ct.kind == CXType_ConstantArray || ct.kind == CXType_IncompleteArray ||
           ct.kind == CXType_VariableArray;
}

/* ---- the walk of a function body ----------------------------------------- */

static void check_call(ctx *c, CXCursor cur) {
    CXCursor ref = clang_getCursorReferenced(cur);
    CXString name = clang_getCursorSpelling(cur);
    const char *nm = clang_getCString(name);
    CXSourceLocation loc = clang_getCursorLocation(cur);
    if (clang_Cursor_isNull(ref) || clang_getCursorKind(ref) != CXCursor_FunctionDecl) {
        fail_at(c, loc, "a call through a pointer or of an undeclared function%s%s: a kernel calls only the "
                "math library and its file's own functions (rule: calls)", nm[0] ? " " : "", nm);
    } else if (in_main_file(ref)) {
        struct fn *f = &c->fns[c->cur];
        int j = add_fn(c, nm);
        f = &c->fns[c->cur];  /* add_fn may move the array */
        f->calls = wf_checked(realloc(f->calls, (size_t)(f->n_calls + 1) * sizeof(int)), "kernel check");
        f->calls[f->n_calls++] = j;
    } else if (is_math(nm)) {
        c->fns[c->cur].flops += 1;  /* a math call counts one operation (README, "User kernels") */
    } else {
        fail_at(c, loc, "calls %s, which is neither in the math library nor defined in this file "
                "(rule: calls; a kernel has no I/O, allocation or system calls)", nm);
    }
    clang_disposeString(name);
}

/* ---- a rowwise kernel's row loops ---------------------------------------- */

static CXCursor unwrap(CXCursor e) {
    while (clang_getCursorKind(e) == CXCursor_UnexposedExpr || clang_getCursorKind(e) == CXCursor_ParenExpr) {
        kids b = { .n = 0 };
        clang_visitChildren(e, collect, &b);
        if (b.n != 1) break;
        e = b.kids[0];
    }
    return e;
}

/* the variable an expression names, or a null cursor */
static CXCursor names(CXCursor e) {
    e = unwrap(e);
    return clang_getCursorKind(e) == CXCursor_DeclRefExpr ? clang_getCursorReferenced(e) : clang_getNullCursor();
}

static void extent_of(CXCursor cur, unsigned *b, unsigned *e) {
    CXSourceRange r = clang_getCursorExtent(cur);
    *b = offset_of(clang_getRangeStart(r));
    *e = offset_of(clang_getRangeEnd(r));
}

/* Records `for (int i = 0; i < n; i++ or ++i) body` (n the function's first
 * parameter): i indexes the row inside body. */
static enum CXChildVisitResult find_loops(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    ctx *c = d;
    if (clang_getCursorKind(cur) != CXCursor_ForStmt || c->n_loops >= 64) return CXChildVisit_Recurse;
    kids k = { .n = 0 };
    clang_visitChildren(cur, collect, &k);
    if (k.n != 4 || clang_getCursorKind(k.kids[0]) != CXCursor_DeclStmt) return CXChildVisit_Recurse;
    kids dk = { .n = 0 };
    clang_visitChildren(k.kids[0], collect, &dk);
    if (dk.n != 1 || clang_getCursorKind(dk.kids[0]) != CXCursor_VarDecl) return CXChildVisit_Recurse;
    CXCursor v = dk.kids[0];
    enum CXTypeKind vt = clang_getCanonicalType(clang_getCursorType(v)).kind;
    if (vt != CXType_Int && vt != CXType_Long) return CXChildVisit_Recurse;
    kids ik = { .n = 0 };
    clang_visitChildren(v, collect, &ik);
    if (ik.n != 1) return CXChildVisit_Recurse;
    CXEvalResult ev = clang_Cursor_Evaluate(ik.kids[0]);
    int zero = ev && clang_EvalResult_getKind(ev) == CXEval_Int && clang_EvalResult_getAsLongLong(ev) == 0;
    if (ev) clang_EvalResult_dispose(ev);
    if (!zero) return CXChildVisit_Recurse;
    /* i < n */
    kids ck = { .n = 0 };
    clang_visitChildren(k.kids[1], collect, &ck);
    char op[8];
    if (clang_getCursorKind(k.kids[1]) != CXCursor_BinaryOperator || ck.n != 2) return CXChildVisit_Recurse;
    token_at(c, k.kids[1], offset_of(clang_getRangeEnd(clang_getCursorExtent(ck.kids[0]))), op, sizeof op);
    if (strcmp(op, "<") || !clang_equalCursors(names(ck.kids[0]), v) ||
        !clang_equalCursors(names(ck.kids[1]), c->nparm))
        return CXChildVisit_Recurse;
    /* i++ or ++i */
    kids uk = { .n = 0 };
    clang_visitChildren(k.kids[2], collect, &uk);
    if (clang_getCursorKind(k.kids[2]) != CXCursor_UnaryOperator || uk.n != 1 ||
        !clang_equalCursors(names(uk.kids[0]), v))
        return CXChildVisit_Recurse;
    char first[8], last[8];
    token_at(c, k.kids[2], offset_of(clang_getRangeStart(clang_getCursorExtent(k.kids[2]))), first, sizeof first);
    token_at(c, k.kids[2], offset_of(clang_getRangeEnd(clang_getCursorExtent(uk.kids[0]))), last, sizeof last);
    if (strcmp(first, "++") && strcmp(last, "++")) return CXChildVisit_Recurse;
    struct row_loop *l = &c->loops[c->n_loops++];
    l->var = v;
    extent_of(k.kids[3], &l->body_b, &l->body_e);
    extent_of(k.kids[2], &l->inc_b, &l->inc_e);
    return CXChildVisit_Recurse;
}

/* The row rules at cur in a rowwise forward or backward: 1 when cur was a
 * subscript the rules settled (allowed), 0 to go on, -1 after failing. */
static int row_rules(ctx *c, CXCursor cur) {
    CXSourceLocation loc = clang_getCursorLocation(cur);
    unsigned at = offset_of(loc);
    enum CXCursorKind kind = clang_getCursorKind(cur);
    if (kind == CXCursor_BinaryOperator || kind == CXCursor_CompoundAssignOperator || kind == CXCursor_UnaryOperator) {
        kids k = { .n = 0 };
        clang_visitChildren(cur, collect, &k);
        if (k.n < 1) return 0;
        char op[8];
        if (kind == CXCursor_UnaryOperator) {
            char first[8], last[8];
            token_at(c, cur, offset_of(clang_getRangeStart(clang_getCursorExtent(cur))), first, sizeof first);
            token_at(c, cur, offset_of(clang_getRangeEnd(clang_getCursorExtent(k.kids[0]))), last, sizeof last);
            snprintf(op, sizeof op, "%s", !strcmp(first, "++") || !strcmp(first, "--") ? first : last);
            if (strcmp(op, "++") && strcmp(op, "--")) return 0;
        } else {
            token_at(c, cur, offset_of(clang_getRangeEnd(clang_getCursorExtent(k.kids[0]))), op, sizeof op);
            if (kind == CXCursor_BinaryOperator && strcmp(op, "=")) return 0;
        }
        CXCursor v = names(k.kids[0]);
        if (clang_Cursor_isNull(v)) return 0;
        if (clang_equalCursors(v, c->nparm)) {
            fail_at(c, loc, "assigns n, the row's length (rule: a rowwise kernel stays within its row)");
            return -1;
        }
        for (int j = 0; j < c->n_loops; j++)
            if (clang_equalCursors(v, c->loops[j].var) && !(at >= c->loops[j].inc_b && at < c->loops[j].inc_e)) {
                fail_at(c, loc, "changes the row loop's variable in its body ('%s'; rule: a rowwise kernel stays "
                        "within its row)", op);
                return -1;
            }
        return 0;
    }
    if (kind != CXCursor_ArraySubscriptExpr) return 0;
    kids k = { .n = 0 };
    clang_visitChildren(cur, collect, &k);
    if (k.n != 2) return 0;
    CXCursor base = names(k.kids[0]);
    if (clang_getCursorKind(base) != CXCursor_ParmDecl) return 0;  /* the general rule decides */
    CXCursor v = names(k.kids[1]);
    for (int j = 0; j < c->n_loops; j++)
        if (!clang_Cursor_isNull(v) && clang_equalCursors(v, c->loops[j].var) && at >= c->loops[j].body_b &&
            at < c->loops[j].body_e)
            return 1;
    fail_at(c, loc, "indexes a row pointer other than by a loop variable i of 'for (int i = 0; i < n; i++)' "
            "(rule: a rowwise kernel stays within its row)");
    return -1;
}

static enum CXChildVisitResult walk(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    ctx *c = d;
    if (c->failed) return CXChildVisit_Break;
    CXSourceLocation loc = clang_getCursorLocation(cur);
    if (c->rowfn) {
        int r = row_rules(c, cur);
        if (r < 0) return CXChildVisit_Break;
        if (r > 0) return CXChildVisit_Recurse;
    }
    switch (clang_getCursorKind(cur)) {
    case CXCursor_GCCAsmStmt:
    case CXCursor_MSAsmStmt:
        fail_at(c, loc, "inline assembly (rule: no asm; the kernel must compile for both backends)");
        return CXChildVisit_Break;
    case CXCursor_VarDecl: {
        CXType t = clang_getCursorType(cur);
        if (clang_getCanonicalType(t).kind == CXType_VariableArray) {
            fail_at(c, loc, "variable-length array (rule: no VLAs; sizes must be constants)");
            return CXChildVisit_Break;
        }
        if (clang_Cursor_getStorageClass(cur) == CX_SC_Static && !is_const(t)) {
            CXString s = clang_getCursorSpelling(cur);
            fail_at(c, loc, "static variable %s keeps state between calls (rule: no mutable global or static "
                    "state)", clang_getCString(s));
            clang_disposeString(s);
            return CXChildVisit_Break;
        }
        break;
    }
    case CXCursor_DeclRefExpr: {
        CXCursor ref = clang_getCursorReferenced(cur);
        if (clang_getCursorKind(ref) == CXCursor_VarDecl && clang_Cursor_getStorageClass(ref) != CX_SC_None &&
            !is_const(clang_getCursorType(ref)) && !in_main_file(ref)) {
            CXString s = clang_getCursorSpelling(cur);
            fail_at(c, loc, "reads %s, a global of the C library (rule: no mutable global or static state)",
                    clang_getCString(s));
            clang_disposeString(s);
            return CXChildVisit_Break;
        }
        break;
    }
    case CXCursor_CallExpr:
        check_call(c, cur);
        break;
    case CXCursor_BinaryOperator:
    case CXCursor_CompoundAssignOperator: {
        kids k = { .n = 0 };
        clang_visitChildren(cur, collect, &k);
        if (k.n != 2) break;
        char op[8];
        token_at(c, cur, offset_of(clang_getRangeEnd(clang_getCursorExtent(k.kids[0]))), op, sizeof op);
        int arith = !strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "+=") || !strcmp(op, "-=");
        if (arith && (is_pointer(clang_getCursorType(k.kids[0])) || is_pointer(clang_getCursorType(k.kids[1])))) {
            fail_at(c, loc, "pointer arithmetic '%s' (rule: a kernel touches only the values it is given)", op);
            return CXChildVisit_Break;
        }
        int fl = !strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*") || !strcmp(op, "/") ||
                 !strcmp(op, "+=") || !strcmp(op, "-=") || !strcmp(op, "*=") || !strcmp(op, "/=");
        CXType rt = clang_getCanonicalType(clang_getCursorType(cur));
        if (fl && (rt.kind == CXType_Float || rt.kind == CXType_Double)) c->fns[c->cur].flops += 1;
        break;
    }
    case CXCursor_UnaryOperator: {
        kids k = { .n = 0 };
        clang_visitChildren(cur, collect, &k);
        if (k.n == 1 && is_pointer(clang_getCursorType(k.kids[0]))) {
            char first[8], last[8];
            token_at(c, cur, offset_of(clang_getRangeStart(clang_getCursorExtent(cur))), first, sizeof first);
            token_at(c, cur, offset_of(clang_getRangeEnd(clang_getCursorExtent(k.kids[0]))), last, sizeof last);
            if (!strcmp(first, "++") || !strcmp(first, "--") || !strcmp(last, "++") || !strcmp(last, "--")) {
                fail_at(c, loc, "pointer arithmetic '%s' (rule: a kernel touches only the values it is given)",
                        !strcmp(first, "++") || !strcmp(first, "--") ? first : last);
                return CXChildVisit_Break;
            }
        }
        break;
    }
    case CXCursor_ArraySubscriptExpr: {
        kids k = { .n = 0 };
        clang_visitChildren(cur, collect, &k);
        /* p[0] is *p; a local array of constant size is the function's own */
        if (k.n == 2 && clang_getCanonicalType(clang_getCursorType(k.kids[0])).kind == CXType_Pointer) {
            CXCursor base = k.kids[0];
            while (clang_getCursorKind(base) == CXCursor_UnexposedExpr) {
                kids b = { .n = 0 };
                clang_visitChildren(base, collect, &b);
                if (b.n != 1) break;
                base = b.kids[0];
            }
            CXCursor ref = clang_getCursorReferenced(base);
            int local_array = clang_getCursorKind(ref) == CXCursor_VarDecl &&
                              clang_getCanonicalType(clang_getCursorType(ref)).kind == CXType_ConstantArray;
            CXEvalResult ev = clang_Cursor_Evaluate(k.kids[1]);
            int zero = ev && clang_EvalResult_getKind(ev) == CXEval_Int && clang_EvalResult_getAsLongLong(ev) == 0;
            if (ev) clang_EvalResult_dispose(ev);
            if (!local_array && !zero) {
                fail_at(c, loc, "indexes a pointer it was given (rule: a kernel touches only the values it is given)");
                return CXChildVisit_Break;
            }
        }
        break;
    }
    default:
        break;
    }
    return CXChildVisit_Recurse;
}

/* ---- the file's top level ------------------------------------------------- */

/* The text of a declaration, without its leading storage words. */
static void append_decl(ctx *c, char **text, size_t *len, CXCursor cur, const char *prefix, const char *suffix) {
    CXSourceRange r = clang_getCursorExtent(cur);
    unsigned b = offset_of(clang_getRangeStart(r)), e = offset_of(clang_getRangeEnd(r));
    CXToken *toks;
    unsigned nt;
    clang_tokenize(c->tu, r, &toks, &nt);
    for (unsigned i = 0; i < nt; i++) {
        CXString s = clang_getTokenSpelling(c->tu, toks[i]);
        const char *t = clang_getCString(s);
        int skip = !strcmp(t, "static") || !strcmp(t, "inline") || !strcmp(t, "extern");
        clang_disposeString(s);
        if (!skip) break;
        b = offset_of(clang_getTokenLocation(c->tu, toks[i + 1 < nt ? i + 1 : i]));
    }
    clang_disposeTokens(c->tu, toks, nt);
    if (e > (unsigned)c->src_len || b > e) return;
    size_t add = strlen(prefix) + (e - b) + strlen(suffix) + 2;
    *text = wf_checked(realloc(*text, *len + add + 1), "kernel check");
    *len += (size_t)snprintf(*text + *len, add + 1, "%s%.*s%s\n", prefix, (int)(e - b), c->src + b, suffix);
}

typedef struct { ctx *c; char *text; size_t len; char *includes; size_t inc_len; } top;

static enum CXChildVisitResult visit_top(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    top *t = d;
    ctx *c = t->c;
    if (c->failed) return CXChildVisit_Break;
    if (!in_main_file(cur)) return CXChildVisit_Continue;
    CXSourceLocation loc = clang_getCursorLocation(cur);
    CXString sp = clang_getCursorSpelling(cur);
    const char *name = clang_getCString(sp);
    switch (clang_getCursorKind(cur)) {
    case CXCursor_InclusionDirective: {
        /* a system header only (the C library's declarations; what the
         * kernel may call from it is the calls rule's); the stage program
         * includes it too */
        CXFile inc = clang_getIncludedFile(cur);
        if (!inc || !clang_Location_isInSystemHeader(clang_getLocation(c->tu, inc, 1, 1))) {
            fail_at(c, loc, "includes \"%s\", not a system header (rule: a kernel is one file; it includes "
                    "only the C library's headers)", name);
            break;
        }
        char line[200];
        snprintf(line, sizeof line, "#include <%s>\n", name);
        size_t add = strlen(line);
        t->includes = wf_checked(realloc(t->includes, t->inc_len + add + 1), "kernel check");
        memcpy(t->includes + t->inc_len, line, add + 1);
        t->inc_len += add;
        break;
    }
    case CXCursor_MacroDefinition:
        fail_at(c, loc, "defines the macro %s (rule: no macros; write a static const instead)", name);
        break;
    case CXCursor_MacroExpansion:
        break;
    case CXCursor_FunctionDecl: {
        /* the stage program's own names: wf_* (weft/rt.h) and its functions */
        if (!strncmp(name, "wf_", 3) || !strncmp(name, "WF_", 3) || !strcmp(name, "main") ||
            !strcmp(name, "forward") || !strcmp(name, "backward") || !strcmp(name, "step")) {
            fail_at(c, loc, "function %s takes a name the generated program uses (rule: names; not main, "
                    "forward, backward, step or wf_*)", name);
            break;
        }
        if (clang_Cursor_hasAttrs(cur)) {
            fail_at(c, loc, "%s carries attributes (rule: plain C functions; weft adds what each backend needs)",
                    name);
            break;
        }
        int i = add_fn(c, name);
        if (!clang_isCursorDefinition(cur)) break;
        if (clang_Cursor_isVariadic(cur)) {
            fail_at(c, loc, "%s is variadic (rule: a kernel's functions take fixed arguments)", name);
            break;
        }
        c->fns[i].def = cur;
        c->fns[i].defined = 1;
        c->cur = i;
        /* a rowwise kernel's forward and backward: row loops over n, their first parameter */
        c->rowfn = c->k->kind == UK_ROWWISE && (!strcmp(name, c->k->fwd) || !strcmp(name, c->k->bwd)) &&
                   clang_Cursor_getNumArguments(cur) > 0;
        c->n_loops = 0;
        if (c->rowfn) {
            c->nparm = clang_Cursor_getArgument(cur, 0);
            clang_visitChildren(cur, find_loops, c);
        }
        clang_visitChildren(cur, walk, c);
        c->rowfn = 0;
        append_decl(c, &t->text, &t->len, cur, "static inline WF_KERNEL_FN ", "");
        break;
    }
    case CXCursor_VarDecl:
        if (!is_const(clang_getCursorType(cur))) {
            fail_at(c, loc, "global variable %s is mutable state (rule: no mutable global or static state; "
                    "a constant is static const)", name);
        } else {
            c->cur = add_fn(c, "");  /* an initializer's calls and operators count nowhere */
            clang_visitChildren(cur, walk, c);
            append_decl(c, &t->text, &t->len, cur, "static ", ";");
        }
        break;
    default:
        fail_at(c, loc, "%s%s at file scope (rule: a kernel file holds functions and constants only)",
                name[0] ? name : "a declaration", "");
        break;
    }
    clang_disposeString(sp);
    return CXChildVisit_Continue;
}

/* Recursion: a cycle in the file's call graph, from function i. */
static int find_cycle(ctx *c, int i, int *path, int depth) {
    struct fn *f = &c->fns[i];
    if (f->state == 2) return 0;
    path[depth] = i;
    if (f->state == 1) return depth + 1;
    f->state = 1;
    for (int k = 0; k < f->n_calls; k++) {
        int n = find_cycle(c, f->calls[k], path, depth + 1);
        if (n) return n;
    }
    f->state = 2;
    return 0;
}

/* Floating-point operations of function i with its callees' inlined. */
static double total_flops(const ctx *c, int i, int depth) {
    double s = c->fns[i].flops;
    if (depth < 64)
        for (int k = 0; k < c->fns[i].n_calls; k++) s += total_flops(c, c->fns[i].calls[k], depth + 1);
    return s;
}

/* The definition of the function the kernel's `field` names, or an error. */
static int defined_fn(ctx *c, const char *field, const char *name, CXCursor *f) {
    int i = find_fn(c, name);
    if (i < 0 || !c->fns[i].defined) {
        wf_error("%s:%d: kernel.%s: no function %s is defined in %s (rule: the named functions)", c->plan,
                 c->k->line, field, name, c->k->source);
        c->failed = 1;
        return 0;
    }
    *f = c->fns[i].def;
    return 1;
}

/* The signature of function `which` against the contract: nargs floats, then
 * nptr `float *` outputs; returning float (ret 1) or void (ret 0). */
static void check_signature(ctx *c, const char *field, const char *name, int ret, int nargs, int nptr,
                            const char *contract) {
    CXCursor f;
    if (!defined_fn(c, field, name, &f)) return;
    CXType rt = clang_getCursorResultType(f);
    int ok = ret ? is_float(rt) : clang_getCanonicalType(rt).kind == CXType_Void;
    int n = clang_Cursor_getNumArguments(f);
    ok = ok && n == nargs + nptr;
    for (int a = 0; ok && a < n; a++) {
        CXType t = clang_getCursorType(clang_Cursor_getArgument(f, (unsigned)a));
        if (a < nargs) ok = is_float(t);
        else {
            CXType ct = clang_getCanonicalType(t);
            ok = ct.kind == CXType_Pointer && is_float(clang_getPointeeType(ct)) &&
                 !clang_isConstQualifiedType(clang_getPointeeType(ct));
        }
    }
    if (!ok) {
        CXType ft = clang_getCursorType(f);
        CXString s = clang_getTypeSpelling(ft);
        fail_at(c, clang_getCursorLocation(f), "%s has type %s; an %s kernel's %s must be %s (rule: signature)", name,
                clang_getCString(s), user_kernel_kind_name(c->k->kind), field, contract);
        clang_disposeString(s);
    }
}

/* A rowwise signature: void, then the arguments spelled by `args`: 'n' int,
 * 'c' const float *, 'm' float * (not const). */
static void check_row_signature(ctx *c, const char *field, const char *name, const char *args,
                                const char *contract) {
    CXCursor f;
    if (!defined_fn(c, field, name, &f)) return;
    int n = clang_Cursor_getNumArguments(f);
    int ok = clang_getCanonicalType(clang_getCursorResultType(f)).kind == CXType_Void && n == (int)strlen(args);
    for (int a = 0; ok && a < n; a++) {
        CXType t = clang_getCanonicalType(clang_getCursorType(clang_Cursor_getArgument(f, (unsigned)a)));
        if (args[a] == 'n') ok = t.kind == CXType_Int;
        else
            ok = t.kind == CXType_Pointer && is_float(clang_getPointeeType(t)) &&
                 clang_isConstQualifiedType(clang_getPointeeType(t)) == (args[a] == 'c');
    }
    if (!ok) {
        CXString s = clang_getTypeSpelling(clang_getCursorType(f));
        fail_at(c, clang_getCursorLocation(f), "%s has type %s; a rowwise kernel's %s%s must be %s (rule: signature)",
                name, clang_getCString(s), field, c->k->params ? " (params = true)" : "", contract);
        clang_disposeString(s);
    }
}

static char *read_all(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = 0, cap = 0;
    size_t got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + (long)got + 1 > cap) {
            cap = (n + (long)got + 1) * 2;
            buf = wf_checked(realloc(buf, (size_t)cap), "kernel source");
        }
        memcpy(buf + n, chunk, got);
        n += (long)got;
    }
    fclose(f);
    if (!buf) buf = wf_checked(calloc(1, 1), "kernel source");
    buf[n] = 0;
    *len = n;
    return buf;
}

static int check_one(Program *p, user_kernel *k) {
    long len;
    char *src = read_all(k->path, &len);
    if (!src) {
        wf_error("%s:%d: kernel.source: cannot read %s (the plan's folder / \"%s\")", p->plan_path, k->line,
                 k->path, k->source);
        return -1;
    }
    CXIndex idx = clang_createIndex(0, 0);
    const char *args[] = { "-xc", "-std=c11", "-Wall", "-Werror=implicit-function-declaration" };
    CXTranslationUnit tu = NULL;
    enum CXErrorCode e = clang_parseTranslationUnit2(idx, k->path, args, sizeof args / sizeof *args, NULL, 0,
                                                     CXTranslationUnit_DetailedPreprocessingRecord, &tu);
    ctx c = { .k = k, .plan = p->plan_path, .tu = tu, .src = src, .src_len = len };
    if (e != CXError_Success || !tu) {
        wf_error("%s:%d: kernel.source: libclang could not parse %s (error %d)", p->plan_path, k->line, k->path, (int)e);
        c.failed = 1;
    }
    /* clang's own errors first, as clang words them */
    for (unsigned i = 0; !c.failed && i < clang_getNumDiagnostics(tu); i++) {
        CXDiagnostic dg = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(dg) >= CXDiagnostic_Error) {
            CXString s = clang_getDiagnosticSpelling(dg);
            fail_at(&c, clang_getDiagnosticLocation(dg), "error: %s (clang, parsing as C11)", clang_getCString(s));
            clang_disposeString(s);
        }
        clang_disposeDiagnostic(dg);
    }
    top t = { &c, NULL, 0, NULL, 0 };
    if (!c.failed) clang_visitChildren(clang_getTranslationUnitCursor(tu), visit_top, &t);
    if (!c.failed && k->kind == UK_ROWWISE) {
        if (k->params) {
            check_row_signature(&c, "forward", k->fwd, "nccm",
                                "void (int n, const float *x, const float *w, float *y)");
            if (!c.failed)
                check_row_signature(&c, "backward", k->bwd, "ncccmm", "void (int n, const float *x, const float *w, "
                                    "const float *dy, float *dx, float *dw)");
        } else {
            check_row_signature(&c, "forward", k->fwd, "ncm", "void (int n, const float *x, float *y)");
            if (!c.failed)
                check_row_signature(&c, "backward", k->bwd, "nccm",
                                    "void (int n, const float *x, const float *dy, float *dx)");
        }
    } else if (!c.failed) {
        const char *ctr = k->kind == UK_ELEMENTWISE ? "float (float x)" : "float (float x, float y)";
        check_signature(&c, "forward", k->fwd, 1, k->kind == UK_ELEMENTWISE ? 1 : 2, 0, ctr);
    }
    if (!c.failed && k->kind != UK_ROWWISE) {
        if (k->kind == UK_ELEMENTWISE)
            check_signature(&c, "backward", k->bwd, 1, 2, 0, "float (float x, float dy)");
        else
            check_signature(&c, "backward", k->bwd, 0, 3, 2, "void (float x, float y, float dout, float *dx, float *dy)");
    }
    for (int i = 0; !c.failed && i < c.n_fns; i++) {
        int path[256];
        for (int j = 0; j < c.n_fns; j++) c.fns[j].state = 0;
        int n = c.n_fns < 200 ? find_cycle(&c, i, path, 0) : 0;
        if (n) {
            char chain[512] = "";
            size_t at = 0;
            int start = 0;
            while (path[start] != path[n - 1]) start++;
            for (int j = start; j < n && at < sizeof chain - 140; j++)
                at += (size_t)snprintf(chain + at, sizeof chain - at, "%s%s", j > start ? " -> " : "", c.fns[path[j]].name);
            fail_at(&c, clang_getCursorLocation(c.fns[path[start]].def), "recursion: %s (rule: no recursion)", chain);
        }
        for (int j = 0; !c.failed && j < c.fns[i].n_calls; j++)
            if (!c.fns[c.fns[i].calls[j]].defined)
                fail_at(&c, clang_getCursorLocation(c.fns[i].def), "%s calls %s, which this file declares but does not "
                        "define (rule: calls)", c.fns[i].name, c.fns[c.fns[i].calls[j]].name);
    }
    if (!c.failed) {
        k->flops_fwd = total_flops(&c, find_fn(&c, k->fwd), 0);
        k->flops_bwd = total_flops(&c, find_fn(&c, k->bwd), 0);
        /* its includes first, then its functions and constants */
        size_t n = t.inc_len + t.len;
        k->text = wf_checked(calloc(1, n + 1), "kernel");
        if (t.includes) memcpy(k->text, t.includes, t.inc_len);
        if (t.text) memcpy(k->text + t.inc_len, t.text, t.len);
        k->funcs = wf_checked(calloc((size_t)c.n_fns + 1, sizeof(char *)), "kernel");
        for (int i = 0; i < c.n_fns; i++)
            if (c.fns[i].defined) k->funcs[k->n_funcs++] = wf_checked(strdup(c.fns[i].name), "kernel");
    }
    for (int i = 0; i < c.n_fns; i++) free(c.fns[i].calls);
    free(c.fns);
    free(t.text);
    free(t.includes);
    free(src);
    if (tu) clang_disposeTranslationUnit(tu);
    clang_disposeIndex(idx);
    return c.failed ? -1 : 0;
}

int user_kernel_check_all(Program *p) {
    for (int i = 0; i < p->n_kernels; i++) {
        user_kernel *k = &p->kernels[i];
        int same = -1;  /* the same file checked already: its text is emitted once */
        for (int j = 0; j < i; j++)
            if (strcmp(p->kernels[j].path, k->path) == 0) same = j;
        if (check_one(p, k) != 0) return -1;
        if (same >= 0) continue;
        for (int j = 0; j < i; j++) {
            if (strcmp(p->kernels[j].path, k->path) == 0) continue;
            for (int a = 0; a < k->n_funcs; a++)
                for (int b = 0; b < p->kernels[j].n_funcs; b++)
                    if (strcmp(k->funcs[a], p->kernels[j].funcs[b]) == 0) {
                        wf_error("%s:%d: kernel.source: %s defines %s, as %s does: the generated program holds "
                                 "both files (rule: names)", p->plan_path, k->line, k->source, k->funcs[a],
                                 p->kernels[j].source);
                        return -1;
                    }
        }
    }
    return 0;
}
