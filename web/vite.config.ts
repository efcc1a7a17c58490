// The web application's build (npm run build:web, or the first npm start after a change).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({
  root: import.meta.dirname,
  // Relative asset URLs: the server sets <base href> to the configured path (webapp.path).
  base: './',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1000,
  },
});
