package importschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// apiUse is what usesProgram found in a package: the program's text, the count of
// what it uses, and each exported type's declaring package.
type apiUse struct {
	program                                     string
	types, fields, methods, consts, funcs, vars int
	skipped                                     []string          // generic names, which a program cannot use bare
	home                                        map[string]string // exported type name → package path that declares it
}

// loadPackage type-checks nothing itself: it reads the compiled export data of the
// package at path in the module at dir (go list -export builds it) with the gc
// importer, which is what go/packages does without being a dependency.
func loadPackage(dir, path string) (*types.Package, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %v\n%s", path, err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		f, ok := exports[p]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(f)
	})
	return imp.Import(path)
}

// usesProgram writes a Go program that uses every exported type, struct field
// (with its exact type: var _ *T = &x.F), method (with its signature), constant
// (with its type), function and variable of pkg. It compiles against pkg; a later
// version of pkg under which it still compiles kept all of it.
func usesProgram(pkg *types.Package) *apiUse {
	u := &apiUse{home: map[string]string{}}
	imports := map[string]string{pkg.Path(): "p"}
	names := map[string]bool{"p": true}
	qual := func(other *types.Package) string {
		if n, ok := imports[other.Path()]; ok {
			return n
		}
		n := other.Name()
		for i := 2; names[n]; i++ {
			n = fmt.Sprintf("%s%d", other.Name(), i)
		}
		names[n] = true
		imports[other.Path()] = n
		return n
	}
	// A type from an internal package is written by the name payloads gives it.
	exported := map[*types.TypeName]string{}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if tn, ok := scope.Lookup(name).(*types.TypeName); ok && tn.Exported() {
			if named, ok := types.Unalias(tn.Type()).(*types.Named); ok {
				exported[named.Obj()] = name
			}
		}
	}
	typeStr := func(t types.Type) (string, bool) {
		ok := true
		s := types.TypeString(t, func(other *types.Package) string {
			if other == pkg {
				return "p"
			}
			if strings.Contains(other.Path(), "/internal/") {
				ok = false
				return "internal"
			}
			return qual(other)
		})
		return s, ok
	}
	// Rewrite internal types to their exported aliases before printing.
	var spell func(t types.Type) (string, bool)
	spell = func(t types.Type) (string, bool) {
		switch t := t.(type) {
		case *types.Alias:
			return spell(types.Unalias(t))
		case *types.Named:
			if n, ok := exported[t.Obj()]; ok && t.TypeArgs().Len() == 0 {
				return "p." + n, true
			}
			if t.TypeArgs().Len() > 0 {
				if n, ok := exported[t.Origin().Obj()]; ok {
					var args []string
					for i := 0; i < t.TypeArgs().Len(); i++ {
						a, ok := spell(t.TypeArgs().At(i))
						if !ok {
							return "", false
						}
						args = append(args, a)
					}
					return "p." + n + "[" + strings.Join(args, ", ") + "]", true
				}
			}
			return typeStr(t)
		case *types.Pointer:
			s, ok := spell(t.Elem())
			return "*" + s, ok
		case *types.Slice:
			s, ok := spell(t.Elem())
			return "[]" + s, ok
		case *types.Array:
			s, ok := spell(t.Elem())
			return fmt.Sprintf("[%d]%s", t.Len(), s), ok
		case *types.Map:
			k, ok1 := spell(t.Key())
			v, ok2 := spell(t.Elem())
			return "map[" + k + "]" + v, ok1 && ok2
		case *types.Signature:
			return spellSig(spell, t)
		}
		return typeStr(t)
	}
	var body strings.Builder
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			named, _ := types.Unalias(o.Type()).(*types.Named)
			if named != nil {
				u.home[name] = named.Obj().Pkg().Path()
			}
			if named != nil && named.TypeParams().Len() > 0 {
				u.skipped = append(u.skipped, name)
				continue
			}
			u.types++
			fmt.Fprintf(&body, "\n\t_ = func(x *p.%s) {\n", name)
			if st, ok := o.Type().Underlying().(*types.Struct); ok {
				for i := 0; i < st.NumFields(); i++ {
					f := st.Field(i)
					if !f.Exported() {
						continue
					}
					if s, ok := spell(f.Type()); ok {
						fmt.Fprintf(&body, "\t\tvar _ *%s = &x.%s\n", s, f.Name())
					} else {
						fmt.Fprintf(&body, "\t\t_ = x.%s\n", f.Name())
					}
					u.fields++
				}
			}
			ms := types.NewMethodSet(types.NewPointer(o.Type()))
			if _, isIface := o.Type().Underlying().(*types.Interface); isIface {
				ms = types.NewMethodSet(o.Type())
				fmt.Fprintf(&body, "\t\tvar y p.%s = *x\n\t\t_ = y\n", name)
			}
			for i := 0; i < ms.Len(); i++ {
				m := ms.At(i).Obj()
				if !m.Exported() || len(ms.At(i).Index()) > 1 {
					continue // promoted methods are the embedded type's
				}
				recv := "x"
				if _, isIface := o.Type().Underlying().(*types.Interface); isIface {
					recv = "y"
				}
				if s, ok := spell(m.Type()); ok {
					fmt.Fprintf(&body, "\t\tvar _ %s = %s.%s\n", s, recv, m.Name())
				} else {
					fmt.Fprintf(&body, "\t\t_ = %s.%s\n", recv, m.Name())
				}
				u.methods++
			}
			body.WriteString("\t}\n")
		case *types.Const:
			u.consts++
			if b, ok := o.Type().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
				fmt.Fprintf(&body, "\tconst _ = p.%s\n", name)
			} else if s, ok := spell(o.Type()); ok {
				fmt.Fprintf(&body, "\tvar _ %s = p.%s\n", s, name)
			}
		case *types.Func:
			if sig := o.Type().(*types.Signature); sig.TypeParams().Len() > 0 {
				u.skipped = append(u.skipped, name)
				continue
			}
			u.funcs++
			if s, ok := spell(o.Type()); ok {
				fmt.Fprintf(&body, "\tvar _ %s = p.%s\n", s, name)
			} else {
				fmt.Fprintf(&body, "\t_ = p.%s\n", name)
			}
		case *types.Var:
			u.vars++
			if s, ok := spell(o.Type()); ok {
				fmt.Fprintf(&body, "\tvar _ *%s = &p.%s\n", s, name)
			}
		}
	}
	var paths []string
	for path := range imports {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	var b strings.Builder
	b.WriteString("// Code generated by TestRealUpdate: every exported name of package payloads, used.\n\npackage main\n\nimport (\n")
	for _, path := range paths {
		fmt.Fprintf(&b, "\t%s %q\n", imports[path], path)
	}
	b.WriteString(")\n\nfunc main() {\n")
	b.WriteString(body.String())
	b.WriteString("}\n")
	u.program = b.String()
	return u
}

// spellSig writes a signature as a func type.
func spellSig(spell func(types.Type) (string, bool), sig *types.Signature) (string, bool) {
	ok := true
	list := func(t *types.Tuple, variadic bool) string {
		var parts []string
		for i := 0; i < t.Len(); i++ {
			typ := t.At(i).Type()
			if variadic && i == t.Len()-1 {
				s, k := spell(typ.(*types.Slice).Elem())
				ok = ok && k
				parts = append(parts, "..."+s)
				continue
			}
			s, k := spell(typ)
			ok = ok && k
			parts = append(parts, s)
		}
		return strings.Join(parts, ", ")
	}
	s := "func(" + list(sig.Params(), sig.Variadic()) + ")"
	if r := sig.Results(); r.Len() == 1 {
		s += " " + list(r, false)
	} else if r.Len() > 1 {
		s += " (" + list(r, false) + ")"
	}
	return s, ok
}
