// The rows of the bench:import CSV, shared by the file generator (Node) and the baseline (Worker).
export const ROW_CITIES = ["Pune", "Mumbai", "Delhi", "Chennai", "Goa", "Kolkata"];

export const CSV_HEADER = "NAME,EMAIL,MOBILE,AGE,CITY\n";

export function csvRow(i: number): string {
  return `User ${i},user${i}@example.com,+9198${String(i).padStart(8, "0")},${20 + (i % 50)},${ROW_CITIES[i % ROW_CITIES.length]}\n`;
}
