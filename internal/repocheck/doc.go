// Package repocheck holds no code: its tests check the repository itself,
// what no package's own tests see. The README's performance figures are
// quoted from the tables in bench/README.md that the command it names
// writes, and git tracks no build output (no compiled program, no file over
// 2 MiB outside schema/source and testdata), and package inbox stays within
// its bounds (lines, struct fields).
package repocheck
