export function App() {
  return (
    <main className="center">
      <h1>Panel</h1>
      <p>The operator panel of this deployment.</p>
    </main>
  );
}
