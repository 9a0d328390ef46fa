package main

import (
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		list    string
		want    []int
		wantErr bool
	}{
		{"0", []int{0}, false},
		{"0-1", []int{0, 1}, false},
		{"4-6,9,12-13", []int{4, 5, 6, 9, 12, 13}, false},
		{"", nil, true},
		{"3-1", nil, true},
		{"a-b", nil, true},
		{"-1", nil, true},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.list)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (error: %v)", tt.list, got, err, tt.want, tt.wantErr)
		}
	}
}
