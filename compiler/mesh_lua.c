/* mesh_lua.c: the mesh module (weft/mesh.h) as the Lua prelude sees it, so
 * that mesh.order is parsed by the one parser the compiler and the runtime
 * share, and the prelude's mesh fields come from the one axis table.  Handed
 * to the prelude as a chunk argument: the plan never sees it. */
#include <lauxlib.h>

#include "sandbox.h"
#include "weft/mesh.h"

/* layout(order, sizes) -> strides (by axis name), or nil, problem, valid */
static int mesh_layout(lua_State *L) {
    const char *order = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int size[WF_AXES];
    for (int k = 0; k < WF_AXES; k++) {
        lua_getfield(L, 2, wf_axis_name(k));
        size[k] = (int)luaL_optinteger(L, -1, 1);
        lua_pop(L, 1);
    }
    wf_axis axes[WF_AXES];
    char problem[160], valid[200];
    if (wf_mesh_layout(order, size, axes, problem, sizeof problem, valid, sizeof valid) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, problem);
        lua_pushstring(L, valid);
        return 3;
    }
    lua_createtable(L, 0, WF_AXES);
    for (int i = 0; i < WF_AXES; i++) {
        lua_pushinteger(L, axes[i].stride);
        lua_setfield(L, -2, wf_axis_name(axes[i].kind));
    }
    return 1;
}

void mesh_push_lua(lua_State *L) {
    lua_createtable(L, 0, 3);
    lua_createtable(L, WF_AXES, 0);  /* axes = { { name = "dp", max = 65536 }, ... } in table order */
    for (int k = 0; k < WF_AXES; k++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, wf_axis_name(k));
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, wf_axis_max(k));
        lua_setfield(L, -2, "max");
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "axes");
    lua_pushstring(L, WF_MESH_DEFAULT_ORDER);
    lua_setfield(L, -2, "default_order");
    lua_pushcfunction(L, mesh_layout);
    lua_setfield(L, -2, "layout");
}
