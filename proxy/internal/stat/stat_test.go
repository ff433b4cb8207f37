package stat

import "testing"

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if m, p := Quantile(xs, 0.5), Quantile(xs, 0.95); m != 5 || p != 10 {
		t.Fatalf("median %v p95 %v", m, p)
	}
	if xs[0] != 5 {
		t.Fatal("Quantile sorted its argument")
	}
	if Quantile(nil, 0.5) != 0 || Quantile([]float64{3}, 0.95) != 3 {
		t.Fatal("edge cases")
	}
}
